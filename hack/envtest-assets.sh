#!/usr/bin/env bash
# Provides kube-apiserver and etcd for controller-runtime's envtest without downloading
# prebuilt binaries: both are built from the Go module proxy, once per version, and cached in
# .cache/envtest/ (git ignores it). Prints the directory to use as KUBEBUILDER_ASSETS.
#
#   KUBEBUILDER_ASSETS=$(hack/envtest-assets.sh)
#
# Versions can be overridden with KUBE_VERSION and ETCD_VERSION. Build logs go to stderr.
set -euo pipefail

KUBE_VERSION=${KUBE_VERSION:-1.35.4}
ETCD_VERSION=${ETCD_VERSION:-3.6.16}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${ENVTEST_CACHE:-$root/.cache/envtest}
assets="$cache/k8s-$KUBE_VERSION-etcd-$ETCD_VERSION"
mkdir -p "$assets"

log() { echo "envtest-assets: $*" >&2; }

# A build directory with its own module, removed on exit.
workdir=$(mktemp -d)
trap 'rm -rf "$workdir"' EXIT

. "$root/hack/lib/gobuild.sh"

if [ ! -x "$assets/kube-apiserver" ]; then
  log "building kube-apiserver v$KUBE_VERSION from the Go module proxy (about 11 minutes on 2 cores, once)"
  throwaway_module "$workdir/kube" k8s.io/kubernetes "v$KUBE_VERSION"
  build "$workdir/kube" "$assets/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver "$(kube_ldflags "$KUBE_VERSION")"
fi

if [ ! -x "$assets/etcd" ]; then
  log "building etcd v$ETCD_VERSION from the Go module proxy (about 2 minutes, once)"
  throwaway_module "$workdir/etcd" go.etcd.io/etcd/server/v3 "v$ETCD_VERSION"
  build "$workdir/etcd" "$assets/etcd" go.etcd.io/etcd/server/v3 "-s -w"
fi

echo "$assets"
