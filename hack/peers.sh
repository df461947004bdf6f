#!/usr/bin/env bash
# Provides Gardener's own gardener-resource-manager, the benchmark peer that `make webhookload`
# serves the same webhooks with side by side (docs/benchmarks.md): built from the Go module proxy
# at the version pinned in hack/peers/go.mod, once per version, and cached as
# .cache/bin/gardener-resource-manager-<version>. Prints the binary's path.
#
# hack/peers is a module of its own and the project never imports it: Gardener's dependencies
# must not move the main module's versions, and the peer is measured, never linked. Build logs go
# to stderr.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
peers="$root/hack/peers"
cache=${PEERS_CACHE:-$root/.cache/bin}

version=$(go -C "$peers" list -m -f '{{.Version}}' github.com/gardener/gardener)
bin="$cache/gardener-resource-manager-$version"

if [ ! -x "$bin" ]; then
  mkdir -p "$cache"
  echo "peers: building gardener-resource-manager $version from the Go module proxy (about 5–10 minutes on 2 cores, once)" >&2
  (cd "$peers" && CGO_ENABLED=0 go build -mod=readonly -trimpath -o "$bin.tmp" github.com/gardener/gardener/cmd/gardener-resource-manager)
  mv "$bin.tmp" "$bin"
fi

echo "$bin"
