#!/usr/bin/env bash
# A one-node Kubernetes cluster with Knative Serving and Eventing, everything built from source on
# this machine, nothing pulled from the internet (docs/cluster.md).
#
#   hack/cluster.sh up       control plane, node, registry, DNS, ingress; Knative Serving (core) and
#                            Eventing (core, MT-channel-based Broker, InMemoryChannel), all Ready;
#                            beside the cluster a virtual garden (kube-apiserver and etcd, no nodes)
#   hack/cluster.sh release  `make release` of this repository into the cluster's registry ($D/release/)
#   hack/cluster.sh deploy   installs that release the way docs/deployment.md says: kubectl apply -f and
#                            the documented inputs, no Go, no ko
#   hack/cluster.sh down     stops everything and leaves the host as it found it
#   hack/cluster.sh env      prints KUBECONFIG, REGISTRY and friends for a shell or a test
#   hack/cluster.sh warm     builds what up builds, starts nothing (no root needed; as root, also installs Debian's packages)
#
# Needs root (containers, network, iptables). Debian's containerd, runc, CNI plugins, iptables and
# busybox-static are installed when missing; every other binary comes from hack/cluster-assets.sh.
# The cluster lives in $CLUSTER_DIR (default /var/tmp/gardener-knative-cluster), so that `down`
# finds it from any checkout; `up` first tears down what a previous run left.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
D=${CLUSTER_DIR:-/var/tmp/gardener-knative-cluster}

# Ranges and names (docs/cluster.md). Pods get 10.244.0.0/24 on the bridge gk-pods0; Services
# 10.96.0.0/24, routed onto the portless bridge gk-svc0; nothing of either range leaves the machine.
POD_CIDR=10.244.0.0/24 POD_RANGE=10.244.0.0/16 SVC_CIDR=10.96.0.0/24
POD_BRIDGE=gk-pods0 SVC_BRIDGE=gk-svc0 CHAIN=GK-CLUSTER
# The NetworkPolicy enforcer's chain (mangle) and nfqueue.
NETPOL_CHAIN=GK-NETPOL NETPOL_QUEUE=100
NODE=gk-node
ETCD_PORT=22379 API_PORT=26443 REGISTRY=127.0.0.1:25000 INGRESS_PORT=28080 INGRESS_TLS_PORT=28443
# The virtual garden's: a kube-apiserver and etcd of their own, and the range of its Services
# (which no node serves: it has none).
GARDEN_ETCD_PORT=23379 GARDEN_API_PORT=27443 GARDEN_SVC_CIDR=10.97.0.0/24
# The ingress's public entry, what a cluster's external load balancer exposes: only Knative's
# public routes are served on it, cluster-local ones on INGRESS_PORT and INGRESS_TLS_PORT only.
INGRESS_PUBLIC_PORT=28081
# The version `release` builds and `deploy` installs (a pre-release of nothing: only this cluster has it).
RELEASE_VERSION=${RELEASE_VERSION:-v0.0.0-cluster}
# The kernel settings kubelet and kube-proxy change; `down` restores what `up` found.
SYSCTLS="vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops kernel/keys/root_maxkeys
kernel/keys/root_maxbytes net/ipv4/conf/all/route_localnet net/bridge/bridge-nf-call-iptables net/ipv4/ip_forward"

log() { echo "cluster: $*" >&2; }
die() { log "$*"; exit 1; }
kc() { "$assets/kubectl" --kubeconfig "$D/kubeconfig" "$@"; }
kg() { "$assets/kubectl" --kubeconfig "$D/garden-kubeconfig" "$@"; }
ctr_() { ctr --address "$D/containerd/containerd.sock" -n k8s.io "$@"; }

# start NAME CMD...: a process that outlives this script, its pid in $D/pids/NAME.
start() {
  local name=$1; shift
  setsid "$@" >"$D/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$D/pids/$name"
  echo "$name" >>"$D/pids/order"
}

# wait_for WHAT SECONDS CMD...: polls CMD every second.
wait_for() {
  local what=$1 secs=$2; shift 2
  for _ in $(seq "$secs"); do "$@" >/dev/null 2>&1 && return 0; sleep 1; done
  die "$what not ready after ${secs}s (logs: $D/logs)"
}

ensure_packages() {
  local missing=() pkg
  for pkg in containerd runc containernetworking-plugins iptables busybox-static; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]} from Debian"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
  fi
}

host_ip() { ip -4 -o route get 1.1.1.1 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p'; }

network_up() {
  mkdir -p "$D/sysctl"
  for s in $SYSCTLS; do [ -f "/proc/sys/$s" ] && cat "/proc/sys/$s" >"$D/sysctl/${s//\//.}"; done
  # Service addresses: onto a bridge without ports (this kernel has no dummy driver), so that the
  # host's first route lookup succeeds and kube-proxy's DNAT (nat OUTPUT, after that lookup)
  # applies to the host's own traffic, while an address nothing serves goes nowhere.
  ip link add "$SVC_BRIDGE" type bridge
  ip link set "$SVC_BRIDGE" up
  ip route add "$SVC_CIDR" dev "$SVC_BRIDGE"
  # Pod addresses beyond the pod bridge's /24 are unreachable (the bridge's own route is more specific).
  ip route add unreachable "$POD_RANGE"
  # Pods and Services never talk to any interface but the cluster's own. The host's own traffic to
  # a Service keeps the service bridge as its interface after kube-proxy's DNAT to a pod (filter
  # OUTPUT sees the first route), so that is let through first.
  iptables -N "$CHAIN"
  iptables -A "$CHAIN" -o "$SVC_BRIDGE" -j RETURN
  # The host's own traffic to its own addresses (e.g. to the pod bridge's, where test/cluster
  # serves its chart registry) stays on the machine.
  iptables -A "$CHAIN" -o lo -j RETURN
  iptables -A "$CHAIN" -s "$POD_RANGE" ! -o "$POD_BRIDGE" -j DROP
  iptables -A "$CHAIN" -d "$POD_RANGE" ! -o "$POD_BRIDGE" -j DROP
  iptables -A "$CHAIN" -d "$SVC_CIDR" -j DROP
  iptables -I FORWARD -j "$CHAIN"
  iptables -I OUTPUT -j "$CHAIN"
  # NetworkPolicies: the first packet of every new connection forwarded to or from a pod (pod to
  # pod, also through a Service) goes to the enforcer's nfqueue (netpol, started by cluster_up),
  # which accepts or drops it as the policies say; the rest of the connection follows conntrack.
  # The node's own traffic (kubelet's probes, the ingress, the egress proxy, the suite) is
  # locally generated, not forwarded, and so not governed, as on common enforcers. In mangle,
  # before filter's FORWARD, so that an accepted packet still meets GK-CLUSTER and kube-proxy's
  # rules; --queue-bypass lets packets through while no enforcer listens (before it starts).
  # xtables' NFQUEUE target: this kernel has no nft_queue (CONFIG_NFT_QUEUE), which
  # kube-network-policies' own nftables rules need.
  iptables -t mangle -N "$NETPOL_CHAIN"
  for dir in -d -s; do
    iptables -t mangle -A "$NETPOL_CHAIN" "$dir" "$POD_CIDR" -m conntrack --ctstate NEW \
      -j NFQUEUE --queue-num "$NETPOL_QUEUE" --queue-bypass
  done
  iptables -t mangle -I FORWARD -j "$NETPOL_CHAIN"
}

# The Kubernetes control plane and node (settings: docs/cluster.md).
cluster_up() {
  local hostip=$1
  mkdir -p "$D"/{etcd,pki,containerd,cni,kubelet,pod-logs}
  openssl genrsa -out "$D/pki/sa.key" 2048 2>/dev/null
  echo "admintoken,admin,admin,system:masters" >"$D/pki/tokens.csv"
  start etcd "$assets/etcd" --data-dir "$D/etcd" --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" --listen-peer-urls http://127.0.0.1:$((ETCD_PORT + 1)) \
    --quota-backend-bytes 2147483648 --unsafe-no-fsync
  # Bound to the host's address, so that pods reach it through the kubernetes Service.
  # kube-apiserver reaches webhooks through the egress proxy, which resolves cluster-local names
  # with the cluster's DNS (the host's resolver knows none), as a shoot's kube-apiserver reaches
  # its cluster through konnectivity.
  cat >"$D/egress.yaml" <<E
apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
- name: cluster          # webhooks registered by Service
  connection:
    proxyProtocol: HTTPConnect
    transport:
      uds:
        udsName: $D/egress.sock
- name: controlplane     # webhooks registered by URL
  connection:
    proxyProtocol: HTTPConnect
    transport:
      uds:
        udsName: $D/egress.sock
E
  start egress "$assets/clusteregress" -socket "$D/egress.sock" -dns "$hostip:53"
  # Knative's cluster-local TLS (Traefik's certificate, the CA registrations by URL trust).
  ingress_tls
  # Authorization: Node and RBAC, as a seed's. GRM's node-agent authorizer is the shoots'
  # (gardenlet configures it for shoot kube-apiservers only): test/cluster's shoots call it at
  # their tenant paths; the seed's own paths answer only the seed's proof, which a file written
  # before the deployment cannot carry.
  cat >"$D/authorization.yaml" <<A
apiVersion: apiserver.config.k8s.io/v1
kind: AuthorizationConfiguration
authorizers:
- {type: Node, name: node}
- {type: RBAC, name: rbac}
A
  start kube-apiserver "$assets/kube-apiserver" --egress-selector-config-file "$D/egress.yaml" --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --secure-port "$API_PORT" --bind-address "$hostip" --advertise-address "$hostip" \
    --cert-dir "$D/pki" --token-auth-file "$D/pki/tokens.csv" --authorization-config "$D/authorization.yaml" \
    --service-cluster-ip-range "$SVC_CIDR" --service-account-key-file "$D/pki/sa.key" \
    --service-account-signing-key-file "$D/pki/sa.key" --service-account-issuer https://kubernetes.default.svc \
    --enable-admission-plugins NodeRestriction --allow-privileged
  cat >"$D/kubeconfig" <<K
apiVersion: v1
kind: Config
clusters: [{name: gk, cluster: {server: "https://$hostip:$API_PORT", insecure-skip-tls-verify: true}}]
users: [{name: admin, user: {token: admintoken}}]
contexts: [{name: gk, context: {cluster: gk, user: admin}}]
current-context: gk
K
  # containerd pulls from the local registry only (plain HTTP on loopback); restrict_oom_score_adj
  # because processes here lack CAP_SYS_RESOURCE; the sandbox image is built locally.
  cat >"$D/containerd/config.toml" <<T
version = 2
root = "$D/containerd/root"
state = "$D/containerd/state"
[grpc]
  address = "$D/containerd/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$REGISTRY/pause:1"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."$REGISTRY"]
    endpoint = ["http://$REGISTRY"]
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$D/cni"
T
  cat >"$D/cni/10-gardener-knative.conflist" <<C
{"cniVersion": "1.0.0", "name": "gardener-knative", "plugins": [
  {"type": "bridge", "bridge": "$POD_BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "dataDir": "$D/cni/ipam", "ranges": [[{"subnet": "$POD_CIDR"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
C
  start containerd containerd --config "$D/containerd/config.toml"
  wait_for kube-apiserver 90 curl -skf -H 'Authorization: Bearer admintoken' "https://$hostip:$API_PORT/readyz"
  cat >"$D/kubelet/config.yaml" <<Y
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$D/containerd/containerd.sock
authentication: {anonymous: {enabled: false}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
address: 127.0.0.1
port: 20250
readOnlyPort: 0
healthzPort: 20248
failSwapOn: false
maxPods: 250
evictionHard: {memory.available: "100Mi"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
podLogsDir: $D/pod-logs
clusterDNS: [$hostip]
clusterDomain: cluster.local
serializeImagePulls: false
Y
  start kubelet "$assets/kubelet" --kubeconfig "$D/kubeconfig" --config "$D/kubelet/config.yaml" \
    --hostname-override "$NODE" --root-dir "$D/kubelet" --cert-dir "$D/kubelet/pki"
  start kube-proxy "$assets/kube-proxy" --kubeconfig "$D/kubeconfig" --hostname-override "$NODE" \
    --proxy-mode iptables --cluster-cidr "$POD_CIDR" --conntrack-max-per-core 0 \
    --metrics-bind-address 127.0.0.1:20249 --healthz-bind-address 127.0.0.1:20256
  # NetworkPolicies are enforced by sig-network's kube-network-policies (hack/tools/netpol), a
  # host process beside kube-proxy, on the packets network_up queues to it.
  start netpol "$assets/netpol" --kubeconfig "$D/kubeconfig" --hostname-override "$NODE" \
    --nfqueue-id "$NETPOL_QUEUE" --metrics-bind-address 127.0.0.1:20260
  start kube-controller-manager "$assets/kube-controller-manager" --kubeconfig "$D/kubeconfig" \
    --leader-elect=false --bind-address 127.0.0.1 --secure-port 20257 \
    --service-account-private-key-file "$D/pki/sa.key" --root-ca-file "$D/pki/apiserver.crt" \
    --use-service-account-credentials=false --cluster-signing-duration 8760h
  start kube-scheduler "$assets/kube-scheduler" --kubeconfig "$D/kubeconfig" --leader-elect=false \
    --bind-address 127.0.0.1 --secure-port 20259
  # DNS for cluster.local only; every other name is NXDOMAIN (no upstream).
  cat >"$D/Corefile" <<CF
cluster.local:53 in-addr.arpa:53 {
  bind $hostip
  kubernetes cluster.local in-addr.arpa {
    kubeconfig $D/kubeconfig gk
  }
}
.:53 {
  bind $hostip
  template ANY ANY {
    rcode NXDOMAIN
  }
}
CF
  start coredns "$assets/coredns" -conf "$D/Corefile"
  wait_for "node $NODE" 120 bash -c "'$assets/kubectl' --kubeconfig '$D/kubeconfig' get node $NODE -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True"
}

# garden_up starts the virtual garden (docs/cluster.md): a kube-apiserver and etcd of their own,
# apart from the cluster and with no nodes, where Gardener's API is (the stand-in CRDs, applied by
# up), and of the controllers gardener-operator runs for a virtual garden those its clients need:
# ServiceAccounts and their tokens (the parts' identities there), namespaces, garbage collection.
# Bound to the host's address, as the cluster's kube-apiserver: pods reach it there, as a runtime
# cluster's and a seed's pods reach a virtual garden's load balancer.
garden_up() {
  local hostip=$1
  mkdir -p "$D"/{garden-etcd,garden-pki}
  openssl genrsa -out "$D/garden-pki/sa.key" 2048 2>/dev/null
  start garden-etcd "$assets/etcd" --data-dir "$D/garden-etcd" --listen-client-urls "http://127.0.0.1:$GARDEN_ETCD_PORT" \
    --advertise-client-urls "http://127.0.0.1:$GARDEN_ETCD_PORT" --listen-peer-urls http://127.0.0.1:$((GARDEN_ETCD_PORT + 1)) \
    --quota-backend-bytes 2147483648 --unsafe-no-fsync
  # Webhooks registered in the garden by url (the runtime part's extension-registration, at its TLS
  # Service in the cluster) are reached through the cluster's egress proxy, as a virtual garden's
  # kube-apiserver, a pod of its runtime cluster, reaches that cluster's Services.
  start garden-kube-apiserver "$assets/kube-apiserver" --egress-selector-config-file "$D/egress.yaml" \
    --etcd-servers "http://127.0.0.1:$GARDEN_ETCD_PORT" \
    --secure-port "$GARDEN_API_PORT" --bind-address "$hostip" --advertise-address "$hostip" \
    --cert-dir "$D/garden-pki" --token-auth-file "$D/pki/tokens.csv" --authorization-mode RBAC \
    --service-cluster-ip-range "$GARDEN_SVC_CIDR" --service-account-key-file "$D/garden-pki/sa.key" \
    --service-account-signing-key-file "$D/garden-pki/sa.key" --service-account-issuer https://garden.local
  sed "s|https://$hostip:$API_PORT|https://$hostip:$GARDEN_API_PORT|" "$D/kubeconfig" >"$D/garden-kubeconfig"
  wait_for "garden kube-apiserver" 90 curl -skf -H 'Authorization: Bearer admintoken' "https://$hostip:$GARDEN_API_PORT/readyz"
  start garden-kube-controller-manager "$assets/kube-controller-manager" --kubeconfig "$D/garden-kubeconfig" \
    --leader-elect=false --bind-address 127.0.0.1 --secure-port 20267 \
    --controllers serviceaccount-token-controller,serviceaccount-controller,namespace-controller,garbage-collector-controller,root-ca-certificate-publisher-controller \
    --service-account-private-key-file "$D/garden-pki/sa.key" --root-ca-file "$D/garden-pki/apiserver.crt" \
    --use-service-account-credentials=false
}

# module_dir MODULE: where Knative's tools module has MODULE, downloaded first (go list -m would
# print nothing for a module not yet in the module cache).
module_dir() {
  go -C "$root/hack/tools/knative" mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'
}

# ko resolve of a Knative module's config directories into the local registry, cached by version
# (the images stay in the registry's blob store; their manifests are pushed again each time).
knative_resolve() { # out module dirs...
  local out=$1 module=$2; shift 2
  local dir args=()
  dir=$(module_dir "$module")
  for d in "$@"; do args+=(-f "$dir/$d"); done
  (cd "$root/hack/tools/knative" && KO_DOCKER_REPO="$REGISTRY/knative" KO_DEFAULTBASEIMAGE="$REGISTRY/base:nonroot" \
    GOFLAGS=-mod=readonly "$assets/ko" resolve -R --insecure-registry --platform linux/amd64 "${args[@]}") >"$out" 2>"$D/logs/ko-$(basename "$out" .yaml).log"
}

# The config directories of Knative's modules that `up` applies.
SERVING_DIRS="config/core"
EVENTING_DIRS="config/core config/channels/in-memory-channel config/brokers/mt-channel-broker"

knative_up() {
  local hostip=$1
  log "Knative: building Serving and Eventing with ko (about 3 minutes warm)"
  # shellcheck disable=SC2086 # word lists
  knative_resolve "$D/serving.yaml" knative.dev/serving $SERVING_DIRS &
  local serving=$!
  # shellcheck disable=SC2086
  knative_resolve "$D/eventing.yaml" knative.dev/eventing $EVENTING_DIRS
  wait $serving || die "ko resolve of Knative Serving failed ($D/logs/ko-serving.log)"
  # serving's module zip lacks the files that are symlinks in its repository: the networking CRDs
  # and config-network (knative.dev/networking) and the Image CRD (knative.dev/caching), at the
  # versions serving requires.
  local net cache
  net=$(module_dir knative.dev/networking)/config
  cache=$(module_dir knative.dev/caching)/config
  kc apply -f "$net/ingress.yaml" -f "$net/certificate.yaml" -f "$net/serverlessservice.yaml" \
    -f "$net/domain-claim.yaml" -f "$cache/image.yaml" >/dev/null
  # Knative's webhooks come up with their deployments: apply again until they admit everything.
  apply_retrying "$D/serving.yaml"
  kc apply -f "$net/config-network.yaml" >/dev/null
  # Traefik is the KIngress; scale to zero in seconds so that the suites see it; images by digest.
  # Knative's webhook validates these ConfigMaps: retried until it serves.
  wait_for config-network 120 kc -n knative-serving patch configmap config-network --type merge \
    -p '{"data":{"ingress-class":"traefik.ingress.networking.knative.dev"}}'
  # A landscape's external domain (RFC 2606's example.com, which goes nowhere), so that a public
  # Service gets a public route at all: under Knative's default, svc.cluster.local, every route is
  # cluster-local, and the public entry would refuse everything whatever a Service asks for.
  wait_for config-domain 120 kc -n knative-serving patch configmap config-domain --type merge \
    -p '{"data":{"example.com":""}}'
  wait_for config-autoscaler 120 kc -n knative-serving patch configmap config-autoscaler --type merge \
    -p '{"data":{"stable-window":"6s","scale-to-zero-grace-period":"6s"}}'
  wait_for config-deployment 120 kc -n knative-serving patch configmap config-deployment --type merge \
    -p "{\"data\":{\"registries-skipping-tag-resolving\":\"$REGISTRY\"}}"
  # The pod-spec fields the fail-closed webhooks' Services set (docs/deployment.md, prerequisites).
  wait_for config-features 120 kc -n knative-serving patch configmap config-features --type merge \
    -p '{"data":{"kubernetes.podspec-priorityclassname":"enabled","kubernetes.podspec-topologyspreadconstraints":"enabled"}}'
  # Two ConfigMaps of eventing's config/core are symlinks into third_party/ in its repository. They
  # name images of IntegrationSource and EventTransform, from outside the machine: their keys stay
  # (the eventing controller reads each), their values are blanked.
  local third_party
  third_party=$(module_dir knative.dev/eventing)/third_party/eventing-integrations-latest
  for f in "$third_party"/*.yaml; do
    echo "---"
    sed -n '/^apiVersion:/,$p' "$f" | sed 's/^\(  [a-z0-9-]*\): .*@sha256:.*/\1: ""/'
  done >>"$D/eventing.yaml"
  apply_retrying "$D/eventing.yaml"
  # Event senders authenticated (docs/deployment.md, prerequisites): Knative's OIDC sender identity,
  # so that the Broker's EventPolicy and the functions' own checks (pkg/eventauth) hold.
  wait_for "eventing's config-features" 120 kc -n knative-eventing patch configmap config-features --type merge \
    -p '{"data":{"authentication-oidc":"enabled"}}'
  # Traefik runs on the host; Services with an EndpointSlice to the host stand for it in the cluster:
  # traefik for its private entries (Knative's cluster-local routes), traefik-public for the public one.
  kc create namespace traefik >/dev/null
  kc -n traefik create service clusterip traefik --tcp=80:$INGRESS_PORT --tcp=443:$INGRESS_TLS_PORT >/dev/null
  kc -n traefik create service clusterip traefik-public --tcp=80:$INGRESS_PUBLIC_PORT >/dev/null
  kc -n traefik apply -f - >/dev/null <<ES
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: traefik-host, labels: {kubernetes.io/service-name: traefik}}
addressType: IPv4
endpoints: [{addresses: ["$hostip"], conditions: {ready: true}}]
ports: [{name: 80-$INGRESS_PORT, port: $INGRESS_PORT, protocol: TCP}, {name: 443-$INGRESS_TLS_PORT, port: $INGRESS_TLS_PORT, protocol: TCP}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: traefik-public-host, labels: {kubernetes.io/service-name: traefik-public}}
addressType: IPv4
endpoints: [{addresses: ["$hostip"], conditions: {ready: true}}]
ports: [{name: 80-$INGRESS_PUBLIC_PORT, port: $INGRESS_PUBLIC_PORT, protocol: TCP}]
ES
  cp "$D/pki/apiserver.crt" "$D/pki/ca.crt"
  start traefik "$assets/traefik" --global.checknewversion=false --global.sendanonymoususage=false \
    --experimental.knative=true --providers.knative=true --providers.knative.endpoint="https://$hostip:$API_PORT" \
    --providers.knative.token=admintoken --providers.knative.certauthfilepath="$D/pki/ca.crt" \
    --entrypoints.web.address="$hostip:$INGRESS_PORT" --entrypoints.websecure.address="$hostip:$INGRESS_TLS_PORT" \
    --entrypoints.websecure.http.tls=true --providers.file.filename="$D/traefik-tls.yaml" \
    --entrypoints.public.address="$hostip:$INGRESS_PUBLIC_PORT" \
    --providers.knative.publicentrypoints=public --providers.knative.privateentrypoints=web,websecure \
    --providers.knative.publicservice.name=traefik-public --providers.knative.publicservice.namespace=traefik \
    --providers.knative.privateservice.name=traefik --providers.knative.privateservice.namespace=traefik
  small_requests
  wait_deployments knative-serving 300
  wait_deployments knative-eventing 300
  # kube-apiserver reaches Knative's webhooks (through the egress proxy): a server-side dry run of
  # a Knative Service and a Broker passes both.
  cat >"$D/probe.yaml" <<P
apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: probe, namespace: default}
spec: {template: {spec: {containers: [{image: "$REGISTRY/pause:1"}]}}}
---
apiVersion: eventing.knative.dev/v1
kind: Broker
metadata: {name: probe, namespace: default}
P
  wait_for "Knative's admission webhooks" 120 "$assets/kubectl" --kubeconfig "$D/kubeconfig" create --dry-run=server -f "$D/probe.yaml"
}

# Knative's own pods request 1.35 CPUs, its queue-proxy 25m per pod: on a 2-CPU node that leaves too
# little for 30 functions and webhooks starting at once (their first revision runs once before it is
# Ready). Knative's pods request 10m here, and one replica each (their HPAs scale on CPU relative to
# the request); the functions' own requests stay as config/ sets them.
small_requests() {
  local ns
  for ns in knative-serving knative-eventing; do
    kc -n $ns set resources deployment --all --requests=cpu=10m >/dev/null
    for h in $(kc -n $ns get hpa -o name); do
      kc -n $ns patch "$h" --type merge -p '{"spec":{"minReplicas":1,"maxReplicas":1}}' >/dev/null
    done
  done
  wait_for config-deployment 120 kc -n knative-serving patch configmap config-deployment --type merge \
    -p '{"data":{"queue-sidecar-cpu-request":"5m"}}'
}

# Knative's cluster-local domain over TLS, terminated by Traefik with a certificate for
# *.<namespace>.svc.cluster.local of a CA made here ($D/pki/ingress-ca.crt): what registrations by
# cluster-local URL trust (the scale-to-zero part's input knative-ingress-ca, the shoots'
# enrolment and authorizer files).
ingress_tls() {
  local pki=$D/pki sans="DNS:*.gardener-knative.svc.cluster.local,DNS:*.gardener-knative-runtime.svc.cluster.local,DNS:*.default.svc.cluster.local,DNS:*.svc.cluster.local"
  openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=gardener-knative cluster ingress CA" \
    -keyout "$pki/ingress-ca.key" -out "$pki/ingress-ca.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=cluster-local ingress" -keyout "$pki/ingress.key" -out "$pki/ingress.csr" 2>/dev/null
  openssl x509 -req -in "$pki/ingress.csr" -CA "$pki/ingress-ca.crt" -CAkey "$pki/ingress-ca.key" -CAcreateserial \
    -days 30 -extfile <(echo "subjectAltName=$sans") -out "$pki/ingress.crt" 2>/dev/null
  cat >"$D/traefik-tls.yaml" <<TLS
tls:
  stores:
    default:
      defaultCertificate:
        certFile: $pki/ingress.crt
        keyFile: $pki/ingress.key
TLS
}

apply_retrying() {
  for i in $(seq 10); do
    kc apply -f "$1" >"$D/logs/apply-$(basename "$1" .yaml).log" 2>&1 && return 0
    sleep 5
  done
  die "kubectl apply -f $1 kept failing ($D/logs/apply-$(basename "$1" .yaml).log)"
}

wait_deployments() { # namespace seconds
  wait_for "deployments in $1" "$2" bash -c "'$assets/kubectl' --kubeconfig '$D/kubeconfig' -n $1 wait deploy --all --for condition=Available --timeout 1s"
}

up() {
  [ "$(id -u)" = 0 ] || die "needs root (containers, network, iptables)"
  [ -e "$D" ] && { log "tearing down what a previous run left in $D"; down; }
  local t0 hostip
  t0=$(date +%s)
  ensure_packages
  assets=$("$root/hack/cluster-assets.sh")
  hostip=$(host_ip)
  [ -n "$hostip" ] || die "no host address (a default route's source) to bind kube-apiserver to"
  mkdir -p "$D"/{pids,logs}
  echo "$assets" >"$D/assets"
  echo "$hostip" >"$D/hostip"
  network_up
  start registry "$assets/clusterregistry" -addr "$REGISTRY" -blobs "${REGISTRY_BLOBS:-${CLUSTER_CACHE:-$root/.cache/cluster}/registry}" -busybox /bin/busybox
  wait_for registry 30 curl -sf "http://$REGISTRY/v2/pause/manifests/1" -H 'Accept: application/vnd.oci.image.manifest.v1+json'
  cluster_up "$hostip"
  log "cluster Ready in $(( $(date +%s) - t0 ))s"
  garden_up "$hostip"
  knative_up "$hostip"
  log "Knative Serving and Eventing Ready, $(( $(date +%s) - t0 ))s after up"
  # Gardener's kinds as stand-in CRDs and the namespace garden (hack/clusterprep), in the garden
  # and in the cluster: the garden serves Gardener's API, the cluster as runtime cluster and seed
  # gardener-operator's and the extensions' kinds; each has all of them, so that an object written
  # into the wrong one is found (test/cluster's TestGardenerObjectsWhereGardenerKeepsThem).
  (cd "$root" && go run ./hack/clusterprep) >"$D/clusterprep.yaml"
  kc apply --server-side -f "$D/clusterprep.yaml" >"$D/logs/clusterprep.log"
  kg apply --server-side -f "$D/clusterprep.yaml" >"$D/logs/clusterprep-garden.log"
  env_
}

# release is `make release` into the cluster's registry: ko resolves each part of config/
# (configgen.ReleaseParts) as a release job would, into $D/release/ (the release's files).
release() {
  local t0
  t0=$(date +%s)
  KO_DOCKER_REPO="$REGISTRY/gardener-knative" KO_DEFAULTBASEIMAGE="$REGISTRY/base:nonroot" \
    KO_FLAGS="--insecure-registry --platform linux/amd64" \
    make -C "$root" release VERSION="$RELEASE_VERSION" RELEASE_DIR="$D/release" >"$D/logs/release.log" 2>&1 ||
    { tail -n 30 "$D/logs/release.log" >&2; die "make release VERSION=$RELEASE_VERSION failed"; }
  log "release $RELEASE_VERSION built in $(( $(date +%s) - t0 ))s ($D/release)"
}

# deploy installs the release as docs/deployment.md tells an operator to, with kubectl only: each
# part's file where it belongs (the cluster is the runtime cluster and the seed at once, Gardener's
# "runtime cluster as seed": gardener-knative-runtime.yaml, then gardener-knative-seed.yaml; with
# DEPLOY_VARIANT=scale-to-zero each part's variant on top, which ends as `ko apply -f config/<part>/
# -f config/scale-to-zero/<part>/` does; alike in the garden) and the documented inputs: in each part's namespace the
# Secret knative-ingress-ca (the CA of Knative's cluster-local TLS, made by up: what the
# scale-to-zero registrations, the shoots' best-effort ones and the authorizer trust) and the
# part's garden access, the Secret garden-access (a kubeconfig of the virtual garden with the
# token of the part's identity there, which gardener-knative-garden.yaml, applied to the garden
# first, creates; in the seed's also the seed's name), both created first so that the pods that
# mount them start at once.
# No caBundle is set here: webhookcertificates fills the registrations', the enrolment and
# shootcabundle the shoots'.
deploy() {
  assets=$(cat "$D/assets")
  local t0 part file namespace token
  t0=$(date +%s)
  # The garden's part first, in the virtual garden: each part's identity there and the runtime part's
  # registrations.
  file=gardener-knative-garden${DEPLOY_VARIANT:+-$DEPLOY_VARIANT}.yaml
  kg apply -f "$D/release/$file" >"$D/logs/apply-garden.log" 2>&1 ||
    { tail -n 30 "$D/logs/apply-garden.log" >&2; die "kubectl apply -f $file failed"; }
  for part in runtime seed; do
    file=gardener-knative-$part${DEPLOY_VARIANT:+-$DEPLOY_VARIANT}.yaml
    [ -f "$D/release/$file" ] || die "no $file in $D/release: hack/cluster.sh release first"
    # The part's namespace (function.Part.Namespace).
    namespace=gardener-knative; [ "$part" = seed ] || namespace=gardener-knative-$part
    kc create namespace "$namespace" --dry-run=client -o yaml | kc apply -f - >/dev/null
    if ! kc -n "$namespace" get secret knative-ingress-ca >/dev/null 2>&1; then
      kc -n "$namespace" create secret generic knative-ingress-ca --from-file=ca.crt="$D/pki/ingress-ca.crt" >/dev/null
    fi
    if ! kc -n "$namespace" get secret garden-access >/dev/null 2>&1; then
      # The part's identity in the garden (configgen.GardenIdentity): its token, once the token
      # controller has filled the Secret, in a kubeconfig of the garden.
      token=
      for _ in $(seq 60); do
        token=$(kg -n kube-system get secret "$namespace-token" -o jsonpath='{.data.token}' 2>/dev/null | base64 -d)
        [ -n "$token" ] && break
        sleep 1
      done
      [ -n "$token" ] || die "no token in kube-system/$namespace-token, the $part part's identity in the garden"
      sed "s|token: admintoken|token: $token|" "$D/garden-kubeconfig" >"$D/garden-access-$part"
      local identity=() # the seed part's: landscape.SeedName
      [ "$part" = seed ] && identity=(--from-literal=seedName=local-seed)
      kc -n "$namespace" create secret generic garden-access --from-file=kubeconfig="$D/garden-access-$part" "${identity[@]}" >/dev/null
    fi
    kc apply -f "$D/release/$file" >"$D/logs/apply-$part.log" 2>&1 ||
      { tail -n 30 "$D/logs/apply-$part.log" >&2; die "kubectl apply -f $file failed"; }
  done
  log "kubectl apply -f of the parts${DEPLOY_VARIANT:+ ($DEPLOY_VARIANT)} done in $(( $(date +%s) - t0 ))s"
}

# warm builds what `up` builds and starts nothing, so that it can run beside other work (.ci/run
# runs it at the lowest priority beside make test): the cluster's binaries, and the Go packages of
# Knative's images, compiled as ko compiles them (CGO_ENABLED=0, -trimpath, linux/amd64), so that
# up's ko resolve finds them in Go's build cache and only links. Needs no root; as root it also
# installs the Debian packages up needs (minutes of download on a fresh machine, no CPU to speak of).
warm() {
  if [ "$(id -u)" = 0 ]; then ensure_packages; fi
  "$root/hack/cluster-assets.sh" >/dev/null
  local tools="$root/hack/tools/knative" module d pkgs=()
  local -A dirs=([knative.dev/serving]=$SERVING_DIRS [knative.dev/eventing]=$EVENTING_DIRS)
  for module in "${!dirs[@]}"; do
    for d in ${dirs[$module]}; do
      mapfile -t -O "${#pkgs[@]}" pkgs < <(grep -rhoE 'ko://[^"'"'"'[:space:]]+' "$(module_dir "$module")/$d" | sed 's|^ko://||')
    done
  done
  mapfile -t pkgs < <(printf '%s\n' "${pkgs[@]}" | sort -u)
  log "compiling the Go packages of Knative's ${#pkgs[@]} images"
  # Several packages, no -o: go build compiles them and keeps nothing but its cache.
  (cd "$tools" && CGO_ENABLED=0 GOOS=linux GOARCH=amd64 GOFLAGS=-mod=readonly go build -trimpath "${pkgs[@]}")
}

down() {
  set +e
  [ -f "$D/assets" ] && assets=$(cat "$D/assets")
  local p
  # kubelet first, so that it restarts nothing; then every container and its shim.
  [ -f "$D/pids/kubelet" ] && kill "$(cat "$D/pids/kubelet")" 2>/dev/null
  if [ -S "$D/containerd/containerd.sock" ]; then
    for c in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks kill -s KILL "$c" 2>/dev/null; done
    sleep 1
    for c in $(ctr_ containers ls -q 2>/dev/null); do ctr_ tasks rm -f "$c" >/dev/null 2>&1; ctr_ containers rm "$c" >/dev/null 2>&1; done
  fi
  for shim in $(pgrep -f "containerd-shim-runc-v2 .*-address $D/"); do
    pkill -KILL -P "$shim"; kill -KILL "$shim"
  done 2>/dev/null
  # The rest by pid, newest first.
  if [ -f "$D/pids/order" ]; then
    for name in $(tac "$D/pids/order"); do
      p=$(cat "$D/pids/$name" 2>/dev/null) || continue
      kill "$p" 2>/dev/null
      for _ in $(seq 20); do kill -0 "$p" 2>/dev/null || break; sleep 0.25; done
      kill -9 "$p" 2>/dev/null
    done
  fi
  for n in $(ip netns list 2>/dev/null | awk '/^cni-/ {print $1}'); do ip netns del "$n"; done
  mount | awk -v d="$D/" 'index($3, d) == 1 {print $3}' | sort -r | xargs -r -n1 umount -l
  for l in $(ip -o link show master "$POD_BRIDGE" 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do ip link del "$l"; done 2>/dev/null
  ip link del "$POD_BRIDGE" 2>/dev/null
  ip link del "$SVC_BRIDGE" 2>/dev/null
  ip route del unreachable "$POD_RANGE" 2>/dev/null
  iptables -D FORWARD -j "$CHAIN" 2>/dev/null
  iptables -D OUTPUT -j "$CHAIN" 2>/dev/null
  iptables -F "$CHAIN" 2>/dev/null
  iptables -X "$CHAIN" 2>/dev/null
  iptables -t mangle -D FORWARD -j "$NETPOL_CHAIN" 2>/dev/null
  iptables -t mangle -F "$NETPOL_CHAIN" 2>/dev/null
  iptables -t mangle -X "$NETPOL_CHAIN" 2>/dev/null
  # kubelet's, kube-proxy's and CNI's chains (nothing else on this host makes KUBE- or CNI- chains).
  for ipt in iptables ip6tables; do
    for t in filter nat mangle; do
      $ipt -t $t -S 2>/dev/null | awk '/^-A (INPUT|OUTPUT|FORWARD|PREROUTING|POSTROUTING) .*-j (KUBE|CNI)-/ {sub(/^-A/, "-D"); print}' |
        while read -r rule; do eval "$ipt -t $t $rule"; done
      for c in $($ipt -t $t -S 2>/dev/null | awk '/^-N (KUBE|CNI)-/ {print $2}'); do $ipt -t $t -F "$c"; done
      for c in $($ipt -t $t -S 2>/dev/null | awk '/^-N (KUBE|CNI)-/ {print $2}'); do $ipt -t $t -X "$c"; done
    done
  done
  for d in /sys/fs/cgroup/*/kubepods; do [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null; done
  for f in "$D"/sysctl/*; do [ -f "$f" ] && cat "$f" >"/proc/sys/$(basename "$f" | tr . /)" 2>/dev/null; done
  rm -rf "$D"
  set -e
}

env_() {
  echo "export KUBECONFIG=$D/kubeconfig"
  echo "export GARDEN_KUBECONFIG=$D/garden-kubeconfig"
  echo "export REGISTRY=$REGISTRY"
  echo "export CLUSTER_DIR=$D"
  echo "export CLUSTER_ASSETS=$(cat "$D/assets")"
  echo "export CLUSTER_HOST_IP=$(cat "$D/hostip")"
  echo "export CLUSTER_INGRESS=$(cat "$D/hostip"):$INGRESS_PORT"
  echo "export CLUSTER_INGRESS_PUBLIC=$(cat "$D/hostip"):$INGRESS_PUBLIC_PORT"
  echo "export CLUSTER_RELEASE_VERSION=$RELEASE_VERSION"
  # The host's address on the pod bridge (the pods' gateway, a private address): what pods reach
  # of a server the suite runs on the host without TLS (test/cluster's chart registry).
  echo "export CLUSTER_POD_GATEWAY=$(ip -4 -o addr show "$POD_BRIDGE" | awk '{split($4, a, "/"); print a[1]}')"
}

case "${1:-}" in
  up) up ;;
  release) release ;;
  deploy) deploy ;;
  down) down ;;
  env) env_ ;;
  warm) warm ;;
  *) echo "usage: $0 up|release|deploy|down|env|warm" >&2; exit 2 ;;
esac
