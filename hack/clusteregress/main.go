// Command clusteregress is the one-node cluster's egress for its kube-apiserver (hack/cluster.sh):
// an HTTP CONNECT proxy that kube-apiserver's egress selector sends its "cluster" traffic (webhooks
// registered by Service) and its "controlplane" traffic (webhooks registered by URL) through, as
// Gardener's shoot kube-apiservers reach their cluster through konnectivity.
// It resolves names with the cluster's DNS, so a webhook registered by a cluster-local URL
// (https://grm-webhooks.gardener-knative.svc.cluster.local/...) is reached as a pod would reach
// it: Service, Knative's ingress, activator or pod. The host's own resolver knows no cluster.local.
package main

import (
	"bufio"
	"context"
	"flag"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

func main() {
	// A Unix socket: kube-apiserver's egress selector speaks HTTP CONNECT over TCP only with TLS.
	socket := flag.String("socket", "", "the Unix socket to accept CONNECT requests on")
	dns := flag.String("dns", "", "the cluster DNS server, host:port")
	flag.Parse()
	resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, *dns)
	}}
	dialers := dialers{
		cluster: &net.Dialer{Timeout: 10 * time.Second, Resolver: resolver},
		host:    &net.Dialer{Timeout: 10 * time.Second},
	}
	_ = os.Remove(*socket)
	listener, err := net.Listen("unix", *socket)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("egress proxy on %s, resolving with %s", *socket, *dns)
	for {
		conn, err := listener.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go tunnel(conn, dialers)
	}
}

// tunnel answers one CONNECT request and then copies bytes both ways until either side closes.
func tunnel(client net.Conn, dialers dialers) {
	defer client.Close()
	_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
	reader := bufio.NewReader(client)
	req, err := http.ReadRequest(reader)
	if err != nil {
		return
	}
	_ = client.SetReadDeadline(time.Time{})
	if req.Method != http.MethodConnect {
		_, _ = io.WriteString(client, "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
		return
	}
	upstream, err := dialers.dial(req.Host)
	if err != nil {
		log.Printf("CONNECT %s: %v", req.Host, err)
		_, _ = io.WriteString(client, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
		return
	}
	defer upstream.Close()
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(upstream, reader); done <- struct{}{} }()
	go func() { _, _ = io.Copy(client, upstream); done <- struct{}{} }()
	<-done
}

// dialers reach cluster names through the cluster's DNS, all others as the host does.
type dialers struct{ cluster, host *net.Dialer }

func (d dialers) dial(hostport string) (net.Conn, error) {
	hostport = clusterName(hostport)
	if host, _, err := net.SplitHostPort(hostport); err == nil && strings.HasSuffix(host, ".cluster.local") {
		return d.cluster.Dial("tcp", hostport)
	}
	return d.host.Dial("tcp", hostport)
}

// clusterName completes a Service's short name (name.namespace.svc, as kube-apiserver addresses
// Services) to the cluster domain: the host's resolver has no cluster search path.
func clusterName(hostport string) string {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil || !strings.HasSuffix(host, ".svc") {
		return hostport
	}
	return net.JoinHostPort(host+".cluster.local", port)
}
