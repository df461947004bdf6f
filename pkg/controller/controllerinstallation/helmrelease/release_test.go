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

	other := errors.New("chart is invalid")
	assert.Equal(t, other, concurrentInstall("ext", other))
	assert.NoError(t, concurrentInstall("ext", nil))
}
