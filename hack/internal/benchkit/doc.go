// Package benchkit is what the benchmarks that run our processes beside Gardener's share
// (hack/benchseed, hack/benchgarden): processes and their resident memory and CPU time read from
// /proc, windows of samples, ports no outgoing connection takes, a queue-proxy stand-in, and
// least-squares fits of cost = a + b·N.
package benchkit
