package controllerinstallation

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A lock held by an earlier process of the same pod (killed mid-action: a pod runs one process
// at a time) is this process's to take over; one of another pod, or of no known pod, is not.
func TestFormerSelfIsAnEarlierProcessOfThePod(t *testing.T) {
	l := &installLock{holder: "controllerinstallation-00001-deployment-abc/0a1b2c3d"}
	assert.True(t, l.formerSelf("controllerinstallation-00001-deployment-abc/ffffffff"))
	assert.False(t, l.formerSelf("controllerinstallation-00001-deployment-xyz/ffffffff"), "another pod's")
	assert.False(t, l.formerSelf("controllerinstallation-00001-deployment-abc/0a1b2c3d"), "this process's own")
	assert.False(t, l.formerSelf("controllerinstallation-00001-deployment-abc-0a1b2c3d"), "a holder without a pod")
	assert.False(t, (&installLock{holder: "/0a1b2c3d"}).formerSelf("/ffffffff"), "no pod name: no takeover")
}
