# Sourced by the hack/ scripts that build Kubernetes and etcd binaries from the Go module proxy
# (envtest-assets.sh, cluster-assets.sh). Needs $workdir (a scratch directory) and log().

# Writes a throwaway module at $1 that requires module $2 at $3 and turns every relative
# replace of that module's go.mod (its staging or sibling modules) into a replace by the
# published version of that module.
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

# build DIR OUTPUT PACKAGE LDFLAGS: a static binary, written atomically.
build() {
  # -mod=mod lets go build add the requirements the throwaway module leaves out.
  (cd "$1" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "$4" -o "$2.tmp" "$3")
  mv "$2.tmp" "$2"
}

# The ldflags that make a Kubernetes binary report its version (kubelet registers it on the node).
kube_ldflags() {
  local version=$1 minor flags="-s -w"
  minor=$(echo "$version" | cut -d. -f2)
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $pkg.gitVersion=v$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  echo "$flags"
}
