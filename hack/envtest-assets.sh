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

# Writes a throwaway module at $1 that requires module $2 at $3 and turns every relative
# replace of that module's go.mod (its staging or sibling modules) into a replace by the
# published version $4 (a printf format applied to the replaced module's path).
throwaway_module() {
  local dir=$1 mod=$2 ver=$3 gomod
  mkdir -p "$dir"
  gomod=$(go mod download -json "$mod@$ver" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
  {
    echo "module envtestassets"
    echo "go $(go env GOVERSION | sed 's/^go//')"
    echo "require $mod $ver"
    # Lines of the form 'path => ./relative' inside replace blocks, or 'replace path => ./rel'.
    # Replaces that only guard against bad imports (etcd's ./FORBIDDEN_DEPENDENCY) are dropped.
    grep -v FORBIDDEN_DEPENDENCY "$gomod" |
      sed -n 's/^\(replace[[:space:]]\+\)\?[[:space:]]*\([^[:space:]]\+\)\([[:space:]]\+v[^[:space:]]\+\)\?[[:space:]]\+=>[[:space:]]\+\.\{1,2\}\/.*$/\2/p' |
      while read -r replaced; do
        echo "replace $replaced => $replaced $(published_version "$replaced" "$ver")"
      done
  } >"$dir/go.mod"
}

# The published version of a module that the main module replaces by a relative path.
published_version() {
  local replaced=$1 ver=$2
  case "$replaced" in
    k8s.io/*) echo "v0.${ver#v1.}" ;; # staging modules: v1.X.Y -> v0.X.Y
    *) echo "$ver" ;;                  # etcd's sibling modules share its version
  esac
}

build() { # dir, output, package, ldflags
  # -mod=mod lets go build add the requirements the throwaway module leaves out.
  (cd "$1" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "$4" -o "$2" "$3")
}

if [ ! -x "$assets/kube-apiserver" ]; then
  log "building kube-apiserver v$KUBE_VERSION from the Go module proxy (about 11 minutes on 2 cores, once)"
  throwaway_module "$workdir/kube" k8s.io/kubernetes "v$KUBE_VERSION"
  minor=$(echo "$KUBE_VERSION" | cut -d. -f2)
  ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=v$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  build "$workdir/kube" "$assets/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver "$ldflags"
  mv "$assets/kube-apiserver.tmp" "$assets/kube-apiserver"
fi

if [ ! -x "$assets/etcd" ]; then
  log "building etcd v$ETCD_VERSION from the Go module proxy (about 2 minutes, once)"
  throwaway_module "$workdir/etcd" go.etcd.io/etcd/server/v3 "v$ETCD_VERSION"
  build "$workdir/etcd" "$assets/etcd.tmp" go.etcd.io/etcd/server/v3 "-s -w"
  mv "$assets/etcd.tmp" "$assets/etcd"
fi

echo "$assets"
