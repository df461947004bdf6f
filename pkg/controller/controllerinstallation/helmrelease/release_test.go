package helmrelease

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"helm.sh/helm/v3/pkg/storage/driver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func TestConcurrentInstallIsAConflict(t *testing.T) {
	err := concurrentInstall("ext", fmt.Errorf("storing: %w", driver.ErrReleaseExists))
	assert.True(t, apierrors.IsConflict(err), "another reconcile installed first: reconcile again, %v", err)

	// Helm's install answers a name still held by another release's records so, its upgrade
	// a release another operation holds so: both are a concurrent reconcile's doing.
	for _, msg := range []string{"cannot re-use a name that is still in use", "another operation (install/upgrade/rollback) is in progress"} {
		assert.True(t, apierrors.IsConflict(concurrentInstall("ext", errors.New(msg))), msg)
	}

	other := errors.New("chart is invalid")
	assert.Equal(t, other, concurrentInstall("ext", other))
	assert.NoError(t, concurrentInstall("ext", nil))
}
