package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
)

// recordingAuthorizer answers by user name and records what it was asked.
type recordingAuthorizer struct {
	last authorizationv1.SubjectAccessReviewSpec
}

func (r *recordingAuthorizer) Authorize(_ context.Context, spec authorizationv1.SubjectAccessReviewSpec) (Decision, string, error) {
	r.last = spec
	switch spec.User {
	case "allowed":
		return Allow, "", nil
	case "denied":
		return Deny, "not you", nil
	case "broken":
		return Deny, "", errors.New("machine unreadable")
	}
	return NoOpinion, "", nil
}

func post(t *testing.T, h http.Handler, body string) (int, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body)))
	var out map[string]any
	if rec.Code == http.StatusOK {
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out))
	}
	return rec.Code, out
}

func TestAuthorizationAnswersInTheVersionAsked(t *testing.T) {
	a := &recordingAuthorizer{}
	h := Authorization("test", "/", a, slog.New(slog.NewTextHandler(io.Discard, nil))).Handler

	code, out := post(t, h, `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"allowed","groups":["g"],"resourceAttributes":{"verb":"get","resource":"nodes","name":"n"}}}`)
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "authorization.k8s.io/v1", out["apiVersion"])
	assert.Equal(t, map[string]any{"allowed": true}, out["status"])
	assert.Equal(t, []string{"g"}, a.last.Groups)

	// v1beta1 spells groups "group".
	code, out = post(t, h, `{"apiVersion":"authorization.k8s.io/v1beta1","kind":"SubjectAccessReview","spec":{"user":"denied","group":["g1"],"resourceAttributes":{"verb":"get","resource":"nodes"}}}`)
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "authorization.k8s.io/v1beta1", out["apiVersion"])
	assert.Equal(t, map[string]any{"allowed": false, "denied": true, "reason": "not you"}, out["status"])
	assert.Equal(t, []string{"g1"}, a.last.Groups)

	code, out = post(t, h, `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"someone","nonResourceAttributes":{"path":"/x","verb":"get"}}}`)
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, map[string]any{"allowed": false}, out["status"], "no opinion: neither allowed nor denied")

	code, out = post(t, h, `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"broken","resourceAttributes":{"verb":"get","resource":"nodes"}}}`)
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, map[string]any{"allowed": false, "evaluationError": "500 machine unreadable"}, out["status"])
}

func TestAuthorizationRejectsMalformedReviews(t *testing.T) {
	h := Authorization("test", "/", &recordingAuthorizer{}, slog.New(slog.NewTextHandler(io.Discard, nil))).Handler
	for _, body := range []string{
		`not json`,
		`{"apiVersion":"authorization.k8s.io/v1","kind":"TokenReview"}`,
		`{"apiVersion":"authorization.k8s.io/v2","kind":"SubjectAccessReview"}`,
		`{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"x"}}`,
	} {
		code, _ := post(t, h, body)
		assert.Equal(t, http.StatusBadRequest, code, body)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)
}

func FuzzAuthorization(f *testing.F) {
	h := Authorization("test", "/", &recordingAuthorizer{}, slog.New(slog.NewTextHandler(io.Discard, nil))).Handler
	for _, seed := range []string{
		`{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"allowed","resourceAttributes":{"verb":"get","resource":"nodes"}}}`,
		`{"apiVersion":"authorization.k8s.io/v1beta1","kind":"SubjectAccessReview","spec":{"user":"denied","group":["g"],"nonResourceAttributes":{"path":"/","verb":"get"}}}`,
		`{}`, `null`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", strings.NewReader(string(body))))
		switch rec.Code {
		case http.StatusBadRequest:
		case http.StatusOK:
			var out authorizationv1.SubjectAccessReview
			if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Kind != "SubjectAccessReview" {
				t.Fatalf("not a SubjectAccessReview answer: %s", rec.Body.String())
			}
		default:
			t.Fatalf("HTTP %d", rec.Code)
		}
	})
}
