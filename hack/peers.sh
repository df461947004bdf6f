#!/usr/bin/env bash
# Provides Gardener's own binaries, built from the Go module proxy at the version pinned in
# hack/peers/go.mod, once per version, and cached as .cache/bin/<name>-<version>. Prints each
# binary's path, one per line, in the order asked.
#
#   hack/peers.sh                      # gardener-resource-manager: the benchmark peer that
#                                      # `make webhookload` and `make bench-seed` measure beside ours
#   hack/peers.sh gardener-resource-manager gardener-apiserver
#                                      # and gardener-apiserver, the tests' garden API (pkg/testenv)
#   hack/peers.sh gardener-controller-manager
#                                      # the peer `make bench-garden` measures our garden functions beside
#
# The binaries missing are built by one `go build`, so that they share their compiled
# dependencies (most of k8s.io/apiserver) and its parallelism. hack/peers is a module of its own
# and the project never imports it: Gardener's dependencies must not move the main module's
# versions, and the peers are run, never linked. Build logs go to stderr.
set -euo pipefail

[ $# -gt 0 ] || set -- gardener-resource-manager
for name in "$@"; do
  case "$name" in
    gardener-resource-manager | gardener-apiserver | gardener-controller-manager) ;;
    *) echo "peers: unknown peer $name (gardener-resource-manager, gardener-apiserver, gardener-controller-manager)" >&2; exit 2 ;;
  esac
done

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
peers="$root/hack/peers"
cache=${PEERS_CACHE:-$root/.cache/bin}
version=$(go -C "$peers" list -m -f '{{.Version}}' github.com/gardener/gardener)

missing=()
for name in "$@"; do
  [ -x "$cache/$name-$version" ] || missing+=("$name")
done
if [ ${#missing[@]} -gt 0 ]; then
  mkdir -p "$cache"
  out=$(mktemp -d "$cache/peers.XXXXXX")
  trap 'rm -rf "$out"' EXIT
  echo "peers: building ${missing[*]} $version from the Go module proxy (about 5–10 minutes each on 2 cores, once)" >&2
  packages=()
  for name in "${missing[@]}"; do packages+=("github.com/gardener/gardener/cmd/$name"); done
  (cd "$peers" && CGO_ENABLED=0 go build -mod=readonly -trimpath -o "$out/" "${packages[@]}")
  for name in "${missing[@]}"; do mv "$out/$name" "$cache/$name-$version"; done
fi

for name in "$@"; do echo "$cache/$name-$version"; done
