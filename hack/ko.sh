#!/usr/bin/env bash
# Provides ko (https://ko.build) without downloading a prebuilt binary: it is built from the Go
# module proxy at the version pinned in hack/tools/go.mod, once per version, and cached as
# .cache/bin/ko-<version> (git ignores .cache/). Prints the binary's path.
#
#   KO=$(hack/ko.sh) && "$KO" resolve -f config/
#
# hack/tools is a module of its own: ko's dependencies (k8s.io/apimachinery v0.36, ...) would
# otherwise move the main module's k8s.io versions. Build logs go to stderr.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tools="$root/hack/tools"
cache=${KO_CACHE:-$root/.cache/bin}

KO_VERSION=$(go -C "$tools" list -m -f '{{.Version}}' github.com/google/ko)
bin="$cache/ko-$KO_VERSION"

log() { echo "ko: $*" >&2; }

if [ ! -x "$bin" ]; then
  mkdir -p "$cache"
  log "building ko $KO_VERSION from the Go module proxy (about 1–2 minutes on 2 cores, once)"
  # The tools module's go.sum pins every dependency; -mod=readonly keeps it untouched.
  (cd "$tools" && CGO_ENABLED=0 go build -mod=readonly -trimpath -o "$bin.tmp" github.com/google/ko)
  mv "$bin.tmp" "$bin"
fi

echo "$bin"
