package testenv

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
)

// TestAuthorizationLogServe: a check is written down as its spec and answered with no opinion
// (neither allowed nor denied, so RBAC decides); what is no SubjectAccessReview gets a 400 and
// is not written.
func TestAuthorizationLogServe(t *testing.T) {
	out, err := os.Create(filepath.Join(t.TempDir(), "authorization-test.log"))
	require.NoError(t, err)
	l := &authorizationLog{out: out}
	check := authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               "system:serviceaccount:gardener-knative:seed",
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "update", Group: "core.gardener.cloud", Resource: "seeds", Subresource: "finalizers", Name: "a"},
	}}
	body, err := json.Marshal(check)
	require.NoError(t, err)

	rec := httptest.NewRecorder()
	l.serve(rec, httptest.NewRequest(http.MethodPost, "/", strings.NewReader(string(body))))
	require.Equal(t, http.StatusOK, rec.Code)
	answer := authorizationv1.SubjectAccessReview{}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &answer))
	assert.False(t, answer.Status.Allowed)
	assert.False(t, answer.Status.Denied)

	rec = httptest.NewRecorder()
	l.serve(rec, httptest.NewRequest(http.MethodPost, "/", strings.NewReader("{")))
	assert.Equal(t, http.StatusBadRequest, rec.Code)

	require.NoError(t, out.Close())
	written, err := os.ReadFile(out.Name())
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(written)), "\n")
	require.Len(t, lines, 1)
	var spec authorizationv1.SubjectAccessReviewSpec
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &spec))
	assert.Equal(t, check.Spec, spec)
}
