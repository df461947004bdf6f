package testenv

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// AuthorizationLogPrefix begins the names of the files the authorization log writes into
// AUDIT_LOG_DIR: one line per authorization check of a ServiceAccount, the SubjectAccessReview's
// spec as JSON.
const AuthorizationLogPrefix = "authorization-"

// authorizationLog is a webhook authorizer that kube-apiserver asks first, for every
// authorization check of a ServiceAccount: it writes the check down and answers no opinion, so
// RBAC, next in the chain, decides as it would alone. The audit log records each request's own
// check only; the checks admission plugins make on a request's behalf
// (OwnerReferencesPermissionEnforcement: update of the owner's finalizers for an object that
// blocks its owner's deletion) are seen here alone.
type authorizationLog struct {
	server *httptest.Server
	mu     sync.Mutex
	out    *os.File
}

// recordAuthorization starts an authorization log writing into dir and configures env's
// kube-apiserver to ask it (a structured authorization configuration in place of
// --authorization-mode). kube-apiserver caches its answers, so a check is written at least
// once, not each time it is made.
func recordAuthorization(env *envtest.Environment, dir string) (*authorizationLog, error) {
	out, err := os.CreateTemp(dir, AuthorizationLogPrefix+"*.log")
	if err != nil {
		return nil, err
	}
	l := &authorizationLog{out: out}
	l.server = httptest.NewTLSServer(http.HandlerFunc(l.serve))
	base := strings.TrimSuffix(out.Name(), ".log")
	kubeconfig, config := base+".kubeconfig", base+".yaml"
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: l.server.Certificate().Raw})
	if err := os.WriteFile(kubeconfig, []byte(fmt.Sprintf(authorizerKubeconfig, l.server.URL, base64.StdEncoding.EncodeToString(ca))), 0o600); err != nil {
		l.close()
		return nil, err
	}
	if err := os.WriteFile(config, []byte(fmt.Sprintf(authorizationConfig, kubeconfig)), 0o600); err != nil {
		l.close()
		return nil, err
	}
	args := env.ControlPlane.GetAPIServer().Configure()
	args.Disable("authorization-mode")
	args.Set("authorization-config", config)
	return l, nil
}

// serve answers one SubjectAccessReview with no opinion after writing its spec down; a review
// it cannot read gets a 400 (kube-apiserver then takes no opinion too: failurePolicy NoOpinion).
func (l *authorizationLog) serve(w http.ResponseWriter, r *http.Request) {
	review := &authorizationv1.SubjectAccessReview{}
	if err := json.NewDecoder(r.Body).Decode(review); err != nil {
		http.Error(w, "not a SubjectAccessReview: "+err.Error(), http.StatusBadRequest)
		return
	}
	line, err := json.Marshal(review.Spec)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	l.mu.Lock()
	_, err = l.out.Write(append(line, '\n'))
	l.mu.Unlock()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	review.Status = authorizationv1.SubjectAccessReviewStatus{Reason: "recorded; RBAC decides"}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(review)
}

func (l *authorizationLog) close() {
	if l == nil {
		return
	}
	l.server.Close()
	_ = l.out.Close()
}

// authorizationConfig asks the log first, only for ServiceAccounts (the functions and webhook
// servers hack/leastprivilege checks), then RBAC, envtest's only authorizer otherwise.
const authorizationConfig = `apiVersion: apiserver.config.k8s.io/v1
kind: AuthorizationConfiguration
authorizers:
- type: Webhook
  name: authorization-log
  webhook:
    timeout: 3s
    subjectAccessReviewVersion: v1
    matchConditionSubjectAccessReviewVersion: v1
    failurePolicy: NoOpinion
    authorizedTTL: 5m
    unauthorizedTTL: 5m
    connectionInfo:
      type: KubeConfigFile
      kubeConfigFile: %s
    matchConditions:
    - expression: request.user.startsWith('system:serviceaccount:')
- type: RBAC
  name: rbac
`

const authorizerKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: authorization-log
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: kube-apiserver
contexts:
- name: authorization-log
  context:
    cluster: authorization-log
    user: kube-apiserver
current-context: authorization-log
`
