package eventauth

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	testclock "k8s.io/utils/clock/testing"
)

const (
	audience = "serving.knative.dev/service/gardener-knative/shoot"
	trigger  = "system:serviceaccount:gardener-knative:shoot-oidc-eventing.knative.dev-trigger"
)

// jwt is a token whose claims say it expires at exp; the fake cluster below decides its validity.
func jwt(name string, exp time.Time) string {
	claims := base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, `{"sub":%q,"exp":%d}`, name, exp.Unix()))
	return "eyJhbGciOiJSUzI1NiJ9." + claims + ".c2ln"
}

// cluster answers reviews as a kube-apiserver: the tokens it issued, for their audience and user.
type cluster struct {
	issued  map[string]authenticationv1.UserInfo
	reviews atomic.Int32
	err     error
}

func (c *cluster) review(_ context.Context, tr *authenticationv1.TokenReview) (*authenticationv1.TokenReview, error) {
	c.reviews.Add(1)
	if c.err != nil {
		return nil, c.err
	}
	if user, ok := c.issued[tr.Spec.Token]; ok {
		tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: user, Audiences: tr.Spec.Audiences}
	} else {
		tr.Status = authenticationv1.TokenReviewStatus{Error: "invalid bearer token"}
	}
	return tr, nil
}

func serve(t *testing.T, a *Authenticator, bearer string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/", nil)
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	rec := httptest.NewRecorder()
	a.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })).ServeHTTP(rec, req)
	return rec
}

func TestAuthenticatorHonoursOnlyItsSendersAndRemembersTheirTokens(t *testing.T) {
	clk := testclock.NewFakePassiveClock(time.Unix(1_000_000, 0))
	good, other := jwt("trigger", clk.Now().Add(time.Hour)), jwt("other", clk.Now().Add(time.Hour))
	c := &cluster{issued: map[string]authenticationv1.UserInfo{good: {Username: trigger}, other: {Username: "system:serviceaccount:gardener-knative:project"}}}
	a, err := New(Policy{Audience: audience, Senders: []string{trigger}}, c.review, clk, nil)
	require.NoError(t, err)

	assert.Equal(t, http.StatusUnauthorized, serve(t, a, "").Code)
	assert.Equal(t, http.StatusUnauthorized, serve(t, a, "forged").Code)
	assert.Contains(t, serve(t, a, other).Body.String(), "is not a Trigger of this function")
	c.reviews.Store(0)
	for range 5 {
		assert.Equal(t, http.StatusOK, serve(t, a, good).Code)
	}
	assert.EqualValues(t, 1, c.reviews.Load(), "a verified token is reviewed once")
	// After rememberAtMost the cluster is asked again (the sender may be gone by then).
	clk.SetTime(clk.Now().Add(rememberAtMost))
	assert.Equal(t, http.StatusOK, serve(t, a, good).Code)
	assert.EqualValues(t, 2, c.reviews.Load())
}

func TestAuthenticatorRemembersATokenNoLongerThanItLives(t *testing.T) {
	clk := testclock.NewFakePassiveClock(time.Unix(1_000_000, 0))
	short := jwt("trigger", clk.Now().Add(time.Minute))
	c := &cluster{issued: map[string]authenticationv1.UserInfo{short: {Username: trigger}}}
	a, err := New(Policy{Audience: audience, Senders: []string{trigger}}, c.review, clk, nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, serve(t, a, short).Code)
	clk.SetTime(clk.Now().Add(time.Minute))
	delete(c.issued, short) // expired: the cluster no longer accepts it
	assert.Equal(t, http.StatusUnauthorized, serve(t, a, short).Code)
}

func TestAuthenticatorAsksForARetryWhenTheClusterCannotReview(t *testing.T) {
	c := &cluster{err: errors.New("connection refused")}
	a, err := New(Policy{Audience: audience, Senders: []string{trigger}}, c.review, testclock.NewFakePassiveClock(time.Now()), nil)
	require.NoError(t, err)
	rec := serve(t, a, jwt("trigger", time.Now().Add(time.Hour)))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code, "the Broker retries")
	assert.Equal(t, "1", rec.Header().Get("Retry-After"))
}

func TestAuthenticatorBoundsWhatItRemembers(t *testing.T) {
	clk := testclock.NewFakePassiveClock(time.Unix(1_000_000, 0))
	c := &cluster{issued: map[string]authenticationv1.UserInfo{}}
	a, err := New(Policy{Audience: audience, Senders: []string{trigger}}, c.review, clk, nil)
	require.NoError(t, err)
	for i := range 3 * maxRemembered {
		token := jwt(fmt.Sprint(i), clk.Now().Add(time.Hour))
		c.issued[token] = authenticationv1.UserInfo{Username: trigger}
		require.Equal(t, http.StatusOK, serve(t, a, token).Code)
		require.LessOrEqual(t, len(a.remembered), maxRemembered)
	}
}

func TestPolicyWithoutSendersIsRefused(t *testing.T) {
	_, err := New(Policy{Audience: audience}, nil, nil, nil)
	assert.ErrorContains(t, err, "EVENT_SENDERS")
	assert.False(t, Policy{}.Enabled())
}

func TestTokenFileTransportSendsTheFilesCurrentToken(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token")
	var got []string
	next := roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		got = append(got, req.Header.Get("Authorization"))
		return &http.Response{StatusCode: http.StatusAccepted, Body: http.NoBody}, nil
	})
	rt := TokenFileTransport(file, next)
	send := func() {
		resp, err := rt.RoundTrip(httptest.NewRequest(http.MethodPost, "http://broker/", nil))
		require.NoError(t, err)
		resp.Body.Close()
	}
	send() // no file: Knative's OIDC is off
	require.NoError(t, os.WriteFile(file, []byte("first\n"), 0o600))
	send()
	require.NoError(t, os.WriteFile(file, []byte("renewed"), 0o600))
	send()
	assert.Equal(t, []string{"", "Bearer first", "Bearer renewed"}, got)
}
