package referenceprotection

import (
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

// ShootSpecUnobserved is the ReferenceMayHaveChanged of Shoots. A Shoot's references (cloud
// profile, exposure class) are in its spec, and a spec change raises metadata.generation, which
// gardenlet acknowledges in status.observedGeneration when it reconciles the Shoot. Knative's
// update event carries only the new Shoot, so the change itself is invisible; a generation not
// yet observed is what marks the updates right after one. That keeps the many status-only
// updates of Shoots (gardenlet's heartbeats) away from the function, each of which would
// otherwise cost a LIST. A reference change whose events all pass unnoticed is caught by the
// resync sweep.
func ShootSpecUnobserved(ev function.Event) bool {
	if ev.Object == nil {
		return true
	}
	return ev.SpecUnobserved()
}
