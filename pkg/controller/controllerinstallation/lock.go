package controllerinstallation

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

// LockNamespace holds, in the seed, the Leases that let one Helm action of an installation run at
// a time across the function's replicas (kube-system: every cluster has it).
const LockNamespace = metav1.NamespaceSystem

// LockName is the Lease of an installation.
func LockName(installation string) string { return "gardener-knative-ci-" + installation }

// installLock makes Helm's actions on one installation's release exclusive across processes:
// Helm's uninstall takes no lock of its own, and an install can outlast the event that started
// it, so an uninstall could otherwise run beside an install and what the install creates after
// it would stay. It is taken only when Helm will run, for longer than Helm may take.
type installLock struct {
	target   function.ClusterClient
	clock    clock.PassiveClock
	holder   string
	duration time.Duration
}

// newInstallLock is the locks of a process that runs as pod (the host name when empty).
func newInstallLock(target function.ClusterClient, clk clock.PassiveClock, helmTimeout time.Duration, pod string) *installLock {
	id := make([]byte, 4)
	_, _ = rand.Read(id)
	if pod == "" {
		pod, _ = os.Hostname()
	}
	return &installLock{target: target, clock: clk, holder: pod + holderSeparator + hex.EncodeToString(id), duration: helmTimeout + 30*time.Second}
}

// holderSeparator parts a holder identity into the pod the process runs as and the process's
// own random id. A pod runs one process of the function at a time, and a container that
// restarts keeps its pod's name.
const holderSeparator = "/"

// formerSelf tells whether holder is an earlier process of this one's pod: one that ended
// without releasing the lock (killed mid-action), since its pod runs this process now. Its
// lock is taken over at once rather than after it expires (the Helm timeout and more), so that a
// restarted function goes on with the installation (a release Helm left pending stays pending
// until it counts as stale, HelmPendingStaleAfter).
func (l *installLock) formerSelf(holder string) bool {
	own, _, _ := strings.Cut(l.holder, holderSeparator)
	theirs, _, found := strings.Cut(holder, holderSeparator)
	return found && own != "" && theirs == own && holder != l.holder
}

// errLocked says another process runs a Helm action on the installation: a transient failure,
// which the sender retries (after that action, which reports its outcome).
type errLocked struct{ installation, holder string }

func (e *errLocked) Error() string {
	return fmt.Sprintf("a Helm action on installation %s is running in %s", e.installation, e.holder)
}

// acquire takes the installation's Lease (free, expired, this process's, or an earlier process's
// of its pod) and returns its release; a Lease another process holds is errLocked.
func (l *installLock) acquire(ctx context.Context, installation string) (func(context.Context), error) {
	now := metav1.NewMicroTime(l.clock.Now())
	seconds := int32(l.duration / time.Second)
	lease := &coordinationv1.Lease{}
	err := l.target.Reader.Get(ctx, client.ObjectKey{Namespace: LockNamespace, Name: LockName(installation)}, lease)
	switch {
	case apierrors.IsNotFound(err):
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: LockNamespace, Name: LockName(installation)},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &l.holder, LeaseDurationSeconds: &seconds, AcquireTime: &now, RenewTime: &now},
		}
		if err := l.target.Writer.Create(ctx, lease); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return nil, &errLocked{installation: installation, holder: "another process"}
			}
			return nil, fmt.Errorf("taking the lock of installation %s: %w", installation, err)
		}
	case err != nil:
		return nil, fmt.Errorf("reading the lock of installation %s: %w", installation, err)
	default:
		holder := ""
		if lease.Spec.HolderIdentity != nil {
			holder = *lease.Spec.HolderIdentity
		}
		if holder != "" && holder != l.holder && !expired(lease, l.clock.Now()) && !l.formerSelf(holder) {
			return nil, &errLocked{installation: installation, holder: holder}
		}
		if _, err := l.target.Writer.Patch(ctx, lease, func() {
			lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds, lease.Spec.AcquireTime, lease.Spec.RenewTime = &l.holder, &seconds, &now, &now
		}); err != nil {
			if apierrors.IsConflict(err) {
				return nil, &errLocked{installation: installation, holder: "another process"}
			}
			return nil, fmt.Errorf("taking the lock of installation %s: %w", installation, err)
		}
	}
	return func(ctx context.Context) {
		// A lock not released expires: what matters is that no other process takes it early.
		_ = l.target.Writer.Delete(ctx, lease)
	}, nil
}

// expired tells whether the lease's holder let it run out.
func expired(lease *coordinationv1.Lease, now time.Time) bool {
	if lease.Spec.RenewTime == nil || lease.Spec.LeaseDurationSeconds == nil {
		return true
	}
	return now.After(lease.Spec.RenewTime.Add(time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second))
}
