package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	authorizationv1 "k8s.io/api/authorization/v1"
	authorizationv1beta1 "k8s.io/api/authorization/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Decision is an authorizer's answer.
type Decision int

const (
	// NoOpinion lets the kube-apiserver's next authorizer decide.
	NoOpinion Decision = iota
	Allow
	Deny
)

func (d Decision) String() string {
	return [...]string{"no-opinion", "allow", "deny"}[d]
}

// Authorizer decides a SubjectAccessReview.
type Authorizer interface {
	Authorize(ctx context.Context, spec authorizationv1.SubjectAccessReviewSpec) (Decision, string, error)
}

// maxReviewBytes bounds a SubjectAccessReview's body.
const maxReviewBytes = 1 << 20

// Authorization serves an authorizer as a kube-apiserver authorization webhook: it answers
// SubjectAccessReviews of authorization.k8s.io/v1 and v1beta1 in the version asked. A review
// it cannot decode gets 400; an authorizer error is an evaluation error (no decision).
func Authorization(name, path string, authorizer Authorizer, log *slog.Logger) Webhook {
	log = log.With("webhook", name)
	return Webhook{Name: name, Path: path, authorization: true, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "SubjectAccessReviews are POSTed", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxReviewBytes))
		if err != nil {
			http.Error(w, fmt.Sprintf("reading SubjectAccessReview: %v", err), http.StatusBadRequest)
			return
		}
		review, err := decodeReview(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		decision, reason, err := authorizer.Authorize(r.Context(), review.Spec)
		review.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: decision == Allow, Denied: decision == Deny, Reason: reason}
		if err != nil {
			// Gardener's authorizer handler reports evaluation errors as "500 <error>".
			review.Status = authorizationv1.SubjectAccessReviewStatus{EvaluationError: fmt.Sprintf("%d %v", http.StatusInternalServerError, err)}
			log.Warn("authorization failed", "user", review.Spec.User, "error", err)
		} else {
			log.Debug("authorized", "user", review.Spec.User, "decision", decision.String(), "reason", reason)
		}
		out, err := encodeReview(review)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	})}
}

// answerAuthorization answers a SubjectAccessReview with status, without calling the
// authorizer: an evaluation error, or no opinion (the kube-apiserver asks its next authorizer).
func answerAuthorization(w http.ResponseWriter, r *http.Request, status authorizationv1.SubjectAccessReviewStatus) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxReviewBytes))
	if err != nil {
		http.Error(w, fmt.Sprintf("reading SubjectAccessReview: %v", err), http.StatusBadRequest)
		return
	}
	review, err := decodeReview(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	review.Status = status
	out, err := encodeReview(review)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// review is a SubjectAccessReview with the version it came in.
type review struct {
	apiVersion string
	authorizationv1.SubjectAccessReview
}

func decodeReview(body []byte) (*review, error) {
	var typeMeta metav1.TypeMeta
	if err := json.Unmarshal(body, &typeMeta); err != nil {
		return nil, fmt.Errorf("not a SubjectAccessReview: %v", err)
	}
	if typeMeta.Kind != "SubjectAccessReview" {
		return nil, fmt.Errorf("expected kind SubjectAccessReview, got %q", typeMeta.Kind)
	}
	r := &review{apiVersion: typeMeta.APIVersion}
	switch typeMeta.APIVersion {
	case authorizationv1.SchemeGroupVersion.String():
		if err := json.Unmarshal(body, &r.SubjectAccessReview); err != nil {
			return nil, fmt.Errorf("decoding SubjectAccessReview: %v", err)
		}
	case authorizationv1beta1.SchemeGroupVersion.String():
		var old authorizationv1beta1.SubjectAccessReview
		if err := json.Unmarshal(body, &old); err != nil {
			return nil, fmt.Errorf("decoding SubjectAccessReview: %v", err)
		}
		r.ObjectMeta = old.ObjectMeta
		r.Spec = authorizationv1.SubjectAccessReviewSpec{
			User: old.Spec.User, Groups: old.Spec.Groups, UID: old.Spec.UID,
			Extra: map[string]authorizationv1.ExtraValue{},
		}
		for k, v := range old.Spec.Extra {
			r.Spec.Extra[k] = authorizationv1.ExtraValue(v)
		}
		if a := old.Spec.ResourceAttributes; a != nil {
			r.Spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
				Namespace: a.Namespace, Verb: a.Verb, Group: a.Group, Version: a.Version,
				Resource: a.Resource, Subresource: a.Subresource, Name: a.Name,
			}
		}
		if a := old.Spec.NonResourceAttributes; a != nil {
			r.Spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: a.Path, Verb: a.Verb}
		}
	default:
		return nil, fmt.Errorf("unsupported SubjectAccessReview version %q", typeMeta.APIVersion)
	}
	if r.Spec.ResourceAttributes == nil && r.Spec.NonResourceAttributes == nil {
		return nil, fmt.Errorf("SubjectAccessReview has neither resource nor non-resource attributes")
	}
	return r, nil
}

func encodeReview(r *review) ([]byte, error) {
	status := map[string]any{"allowed": r.Status.Allowed}
	if r.Status.Denied {
		status["denied"] = true
	}
	if r.Status.Reason != "" {
		status["reason"] = r.Status.Reason
	}
	if r.Status.EvaluationError != "" {
		status["evaluationError"] = r.Status.EvaluationError
	}
	return json.Marshal(map[string]any{"apiVersion": r.apiVersion, "kind": "SubjectAccessReview", "status": status})
}
