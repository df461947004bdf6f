#!/usr/bin/env bash
# The end-to-end suite on real pods (make e2e-cluster): brings up the one-node cluster with Knative
# built from source (hack/cluster.sh up), builds a release of config/ (make release, into the
# cluster's registry) and installs it as an operator does, with kubectl apply -f, runs test/cluster,
# then installs the release's scale-to-zero part and runs the scale-to-zero tests, then the samples;
# the cluster is torn down on every exit (KEEP_CLUSTER=1 keeps it for a look). Needs root.
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
"$cluster" release
t2=$(date +%s)
"$cluster" deploy
eval "$("$cluster" env)"
echo "e2e-cluster: cluster and Knative up in $((t1 - t0))s, release built in $((t2 - t1))s; kubectl apply -f of it and everything Ready follow"
python3 "$root/hack/registry-sizes.py" "$REGISTRY"
cd "$root"
# The installed release first (min-scale 2 for the fail-closed webhooks): Ready, then at work.
go test -count=1 -timeout 30m -v -run 'TestDeployedAndReady' ./test/cluster/
echo "e2e-cluster: from kubectl apply to all Ready: $(( $(date +%s) - t2 ))s"
go test -count=1 -timeout 30m -v -run 'TestReleaseInstalled|TestNothingReachableFromOutside|TestForgedEventsRefused|TestNetworkPoliciesEnforced|TestCRDDeletionProtection|TestExtensionRegistrationValidatesTheGarden|TestProjectedTokenMount|TestWebhookPodLossRefusesNothing|TestWebhookCertificateRotation|TestGardenRegistrationFollowsARotation|TestNodeAgentAuthorizer|TestProjectCreatesItsNamespace|TestEvent|TestPingSourceSweep|TestShoot' ./test/cluster/

# Then the release's scale-to-zero variant of each part on top (every Service may scale to zero,
# webhook timeouts 30 s): the same end state as `ko apply -f config/<part>/ -f
# config/scale-to-zero/<part>/`.
DEPLOY_VARIANT=scale-to-zero "$cluster" deploy
go test -count=1 -timeout 30m -v -run 'TestScaleToZero|TestAdmissionFromZero' ./test/cluster/

# Last, every function's samples of `make run` on the deployed system, its shoot enrolled with
# the scale-to-zero variant now deployed (its chart registry lives
# only as long as the test; the installations made of it keep resolving the chart every minute).
CLUSTER_SCALE_TO_ZERO=1 go test -count=1 -timeout 30m -v -run 'TestSamples|TestGardenerObjectsWhereGardenerKeepsThem' ./test/cluster/
