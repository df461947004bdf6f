# gardener-knative: the two commands a new machine needs are `make run` and `make test`.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c

# kube-apiserver and etcd for envtest, built from the Go module proxy once and cached in .cache/;
# a recipe line that starts with $(ASSETS) stops when they cannot be provided.
ASSETS = assets=$$(hack/envtest-assets.sh); export KUBEBUILDER_ASSETS=$$assets;
# ko at the version hack/tools/go.mod pins, built from the Go module proxy once and cached in
# .cache/bin/ (test/deploy resolves config/ with it); such a line stops when it cannot be built.
KO = ko=$$(hack/ko.sh); export KO_BIN=$$ko;
# Gardener's own gardener-resource-manager and gardener-controller-manager (the benchmark peers)
# and gardener-apiserver (the garden API of the suites that start it, pkg/testenv), at
# hack/peers/go.mod's version, built from the Go module proxy by one `go build` once and cached in
# .cache/bin/.
PEERS = peers=$$(hack/peers.sh gardener-resource-manager gardener-apiserver gardener-controller-manager); export GARDENER_RESOURCE_MANAGER_BIN=$$(sed -n 1p <<<"$$peers") GARDENER_APISERVER_BIN=$$(sed -n 2p <<<"$$peers") GARDENER_CONTROLLER_MANAGER_BIN=$$(sed -n 3p <<<"$$peers");

.PHONY: run test chaos build generate release bench bench-seed bench-garden coldstart webhookload fuzz envtest-assets ko cluster-up cluster-deploy cluster-down e2e-cluster

## run: a local landscape (kube-apiserver, etcd, every function, Knative's source adapters, samples)
run:
	$(ASSETS) go run ./hack/landscape

## test: every test: unit, integration (envtest) and end-to-end, plus vet and formatting; then
## each function's RBAC against what it used in the suites (kube-apiserver's audit logs). A
## package may take 30 min: on an empty Go build cache, test/deploy's ko resolve builds all of
## config/'s images beside the other packages on two cores (over 10 min; 1 to 2 min warm). Three
## packages at once, not GOMAXPROCS' two: the suites mostly wait on kube-apiservers, events and
## timers (measured in docs/testing.md).
test:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$unformatted" ]; then echo "not gofmt-formatted: $$unformatted"; exit 1; fi
	go vet ./...
	rm -rf .cache/audit
	$(ASSETS) $(KO) $(PEERS) export AUDIT_LOG_DIR=$$PWD/.cache/audit; go test -p 3 -count=1 -timeout 30m ./...
	go run ./hack/leastprivilege -dir .cache/audit

## chaos: the whole landscape under event faults (drops, duplicates, reordering, delays, adapter
## restarts, SIGKILL mid-sweep, two replicas, all combined) against a fault-free run of the same
## script, and owners created and soon deleted under duplicates, reordering and two replicas
## (test/chaos; CHAOS_SEED=n repeats a run's random choices; CHAOS_CONTROL=0, as in .ci/run, skips
## the second fault-free run; CHAOS_TESTS picks the tests, .ci/run leaves out the churn)
CHAOS_TESTS ?= TestWholeLandscapeConvergesUnderFaults|TestOwnersCreatedAndSoonDeletedLeaveNothing
chaos:
	$(ASSETS) CHAOS=1 go test -count=1 -v -timeout 30m -run '$(CHAOS_TESTS)' ./test/chaos/

build:
	go build ./...

## generate: regenerate the manifests of config/ that are derived (sources, scale-to-zero variant)
generate:
	go run ./hack/genconfig

## release: VERSION=v1.2.3 KO_DOCKER_REPO=<registry>: resolved manifests of each part of config/ in
## .cache/release/$(VERSION)/, or RELEASE_DIR (images by digest, readable names, versioned; docs/deployment.md)
release:
	@[ -n "$(VERSION)" ] || { echo "make release VERSION=v1.2.3"; exit 1; }
	$(KO) go run ./hack/release -version $(VERSION) $(if $(RELEASE_DIR),-out $(RELEASE_DIR))

## bench: benchmarks (speed and allocations), never run as tests
bench:
	$(ASSETS) go test -run '^$$' -bench . -benchmem ./...

## coldstart: a webhook server's cold start (exec → first TLS AdmissionReview) and idle RSS, 20 runs
coldstart:
	go run ./hack/coldstart -runs 20

## webhookload: every webhook's p50/p90/p99 under sequential and concurrent load against envtest, side
## by side with Gardener's own gardener-resource-manager (built once by hack/peers.sh) serving the
## same webhooks (hack/webhookload; WEBHOOKLOAD_FLAGS, e.g. -n 2000 -webhooks crd-deletion-protection)
webhookload:
	$(ASSETS) peer=$$(hack/peers.sh); go run ./hack/webhookload -peer "$$peer" $(WEBHOOKLOAD_FLAGS)

## bench-seed: one seed serving N shoots, our per-seed deployment beside Gardener's per-shoot
## gardener-resource-manager (hack/peers.sh): memory, CPU and requests per sync period, full sync,
## drift reverted, fitted a + b·N and extrapolated to 250 shoots (hack/benchseed; BENCHSEED_FLAGS,
## e.g. -n 10,25 -period 30s, or -sides ours; N = 10 and 25 took 25 min on 2 cores, N = 25 and 50 40 min)
bench-seed:
	$(ASSETS) peer=$$(hack/peers.sh); go run ./hack/benchseed -peer "$$peer" $(BENCHSEED_FLAGS)

## bench-garden: the controller-manager functions at a garden's size beside Gardener's
## gardener-controller-manager (hack/peers.sh): N Shoots of real size with a large landscape's other
## kinds and churn; memory per process under config/'s limits, CPU, requests and bytes read per
## hour, events delivered per function; fitted a + b·N, extrapolated to 30,000 Shoots
## (hack/benchgarden; BENCHGARDEN_FLAGS, e.g. -n 1000,3000 -window 5m, or -sides ours)
bench-garden:
	$(ASSETS) peer=$$(hack/peers.sh gardener-controller-manager); go run ./hack/benchgarden -peer "$$peer" $(BENCHGARDEN_FLAGS)

## fuzz: run each fuzz target (they live in pkg/) for FUZZTIME; their seed corpora run in `make test`
FUZZTIME ?= 30s
fuzz:
	@for pkg in $$(go list ./pkg/...); do \
	  for target in $$(go test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    go test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

envtest-assets:
	hack/envtest-assets.sh

## e2e-cluster: a one-node cluster with Knative Serving and Eventing built from source, `ko apply
## -f config/` onto it, the end-to-end suite on real pods (test/cluster), teardown (root; docs/cluster.md)
e2e-cluster:
	hack/e2e-cluster.sh

## cluster-up, cluster-deploy, cluster-down: the same cluster by hand (`hack/cluster.sh env` prints its KUBECONFIG)
cluster-up:
	hack/cluster.sh up
cluster-deploy:
	hack/cluster.sh release
	hack/cluster.sh deploy
cluster-down:
	hack/cluster.sh down

## ko: build the pinned ko into .cache/bin/ (once per version) and print its path
ko:
	hack/ko.sh
