#!/usr/bin/env bash
# Provides the binaries of the one-node cluster (hack/cluster.sh) without downloading prebuilt
# ones: everything is built from the Go module proxy, once per version, and cached in
# .cache/cluster/ (git ignores it). Prints the directory that holds them.
#
#   kube-apiserver, etcd            hack/envtest-assets.sh (the same cache the tests use)
#   kubelet, kube-proxy, kube-      k8s.io/kubernetes at the project's Kubernetes version
#   scheduler, kube-controller-
#   manager, kubectl
#   traefik                         Knative's ingress (Traefik's Knative provider), hack/tools/traefik
#   coredns                         cluster.local DNS without an upstream, hack/tools/coredns
#   netpol                          the NetworkPolicy enforcer: sig-network's kube-network-policies,
#                                   hack/tools/netpol
#   ko                              hack/ko.sh
#
# Build logs go to stderr.
set -euo pipefail

KUBE_VERSION=${KUBE_VERSION:-1.35.4}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${CLUSTER_CACHE:-$root/.cache/cluster}
tools="$root/hack/tools"
TRAEFIK_VERSION=$(go -C "$tools/traefik" list -m -f '{{.Version}}' github.com/traefik/traefik/v3)
COREDNS_VERSION=$(go -C "$tools/coredns" list -m -f '{{.Version}}' github.com/coredns/coredns)
NETPOL_VERSION=$(go -C "$tools/netpol" list -m -f '{{.Version}}' sigs.k8s.io/kube-network-policies)
# Each binary is cached under its version; $cache/bin links the ones of this checkout's versions.
kube="$cache/k8s-$KUBE_VERSION" traefik="$cache/traefik-$TRAEFIK_VERSION" coredns="$cache/coredns-$COREDNS_VERSION"
# netpol's own main.go is part of its cache key, beside kube-network-policies' version.
netpol="$cache/netpol-$NETPOL_VERSION-$(cat "$tools/netpol/main.go" "$tools/netpol/go.sum" | sha256sum | cut -c1-12)"
assets="$cache/bin"
mkdir -p "$kube" "$traefik" "$coredns" "$netpol" "$assets"

log() { echo "cluster-assets: $*" >&2; }

workdir=$(mktemp -d)
trap 'rm -rf "$workdir"' EXIT
. "$root/hack/lib/gobuild.sh"

envtest=$("$root/hack/envtest-assets.sh")
for b in kube-apiserver etcd; do ln -sfn "$envtest/$b" "$assets/$b"; done

missing=()
for b in kubelet kube-proxy kube-scheduler kube-controller-manager kubectl; do
  [ -x "$kube/$b" ] || missing+=("$b")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "building ${missing[*]} v$KUBE_VERSION from the Go module proxy (about 5 minutes on 2 cores warm, 15 cold; once)"
  throwaway_module "$workdir/kube" k8s.io/kubernetes "v$KUBE_VERSION"
  for b in "${missing[@]}"; do
    pkg=k8s.io/kubernetes/cmd/$b
    build "$workdir/kube" "$kube/$b" "$pkg" "$(kube_ldflags "$KUBE_VERSION")"
  done
fi
for b in kubelet kube-proxy kube-scheduler kube-controller-manager kubectl; do ln -sfn "$kube/$b" "$assets/$b"; done

# Traefik and CoreDNS are main modules of their own (replace blocks, large dependency trees):
# each is built from its tools module, whose go.sum pins every dependency.
tool() { # name version-dir module-dir package
  if [ ! -x "$2/$1" ]; then
    log "building $1 from $3 (a few minutes, once per version)"
    (cd "$3" && CGO_ENABLED=0 go build -mod=readonly -trimpath -ldflags "-s -w" -o "$2/$1.tmp" "$4")
    mv "$2/$1.tmp" "$2/$1"
  fi
  ln -sfn "$2/$1" "$assets/$1"
}
tool traefik "$traefik" "$tools/traefik" github.com/traefik/traefik/v3/cmd/traefik
tool coredns "$coredns" "$tools/coredns" github.com/coredns/coredns
# The enforcer's command is ours (a kubeconfig instead of the in-cluster configuration), its
# controller kube-network-policies' (hack/tools/netpol/main.go).
tool netpol "$netpol" "$tools/netpol" .
ln -sfn "$("$root/hack/ko.sh")" "$assets/ko"
# The registry is this repository's own code: built every time (Go's build cache makes that quick).
for p in clusterregistry clusteregress; do (cd "$root" && CGO_ENABLED=0 go build -o "$assets/$p" ./hack/$p); done

echo "$assets"
