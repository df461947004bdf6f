// Package shootstate is GCM's ShootState finalizer controller (Gardener's
// pkg/controllermanager/controller/shootstate) as a function: a ShootState keeps the finalizer
// core.gardener.cloud/shootstate while its Shoot's control plane is being migrated to another
// seed, from the start of the Migrate operation until the Restore operation has succeeded, so
// that the state the new seed restores from cannot be deleted in between.
package shootstate

import (
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
)

// Finalizer is the finalizer the function maintains on ShootStates.
const Finalizer = "core.gardener.cloud/shootstate"

// Want is what the ShootState's finalizer should be, given its Shoot's last operation:
//   - add: a Migrate operation (in any state), or a Restore operation that has not succeeded;
//   - remove: a Restore operation that succeeded, or a Reconcile operation;
//   - neither (leave it as it is) for any other operation (Create, Delete).
func Want(op *gardencorev1beta1.LastOperation) (add, remove bool) {
	switch op.Type {
	case gardencorev1beta1.LastOperationTypeMigrate:
		return true, false
	case gardencorev1beta1.LastOperationTypeRestore:
		succeeded := op.State == gardencorev1beta1.LastOperationStateSucceeded
		return !succeeded, succeeded
	case gardencorev1beta1.LastOperationTypeReconcile:
		return false, true
	}
	return false, false
}
