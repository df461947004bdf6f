#!/usr/bin/env bash
# The end-to-end suite on real pods (make e2e-cluster): brings up the one-node cluster with Knative
# built from source (hack/cluster.sh up), deploys config/ with ko as the README says, runs
# test/cluster, then deploys config/scale-to-zero/ and runs the scale-to-zero tests, then the samples; the cluster is
# torn down on every exit (KEEP_CLUSTER=1 keeps it for a look). Needs root.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cluster="$root/hack/cluster.sh"

teardown() {
  local rc=$?
  if [ "${KEEP_CLUSTER:-0}" = 1 ]; then
    echo "e2e-cluster: cluster kept; hack/cluster.sh env, hack/cluster.sh down" >&2
  else
    "$cluster" down
  fi
  exit $rc
}
trap teardown EXIT
trap 'exit 130' INT TERM

t0=$(date +%s)
"$cluster" up >/dev/null
t1=$(date +%s)
"$cluster" deploy
eval "$("$cluster" env)"
echo "e2e-cluster: cluster and Knative up in $((t1 - t0))s; ko apply -f config/ and everything Ready follow"
python3 "$root/hack/registry-sizes.py" "$REGISTRY"
cd "$root"
# The deployed config/ first (min-scale 1 for the fail-closed webhooks): Ready, then at work.
go test -count=1 -timeout 30m -v -run 'TestDeployedAndReady' ./test/cluster/
echo "e2e-cluster: from ko apply to all Ready: $(( $(date +%s) - t1 ))s"
go test -count=1 -timeout 30m -v -run 'TestCRDDeletionProtection|TestProjectedTokenMount|TestWebhookPodLossRefusesNothing|TestNodeAgentAuthorizer|TestProjectCreatesItsNamespace|TestEvent|TestPingSourceSweep|TestShoot' ./test/cluster/

# Then the scale-to-zero variant on top (every Service may scale to zero, webhook timeouts 30 s): on
# the deployed config/, the same end state as `ko apply -f config/ -f config/scale-to-zero/`.
DEPLOY_FILES=config/scale-to-zero/ "$cluster" deploy
go test -count=1 -timeout 30m -v -run 'TestScaleToZero|TestAdmissionFromZero' ./test/cluster/

# Last, every function's samples of `make run` on the deployed system, its shoot enrolled with
# the scale-to-zero variant now deployed (its chart registry lives
# only as long as the test; the installations made of it keep resolving the chart every minute).
CLUSTER_SCALE_TO_ZERO=1 go test -count=1 -timeout 30m -v -run 'TestSamples' ./test/cluster/
