package webhookcertificates

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/tenantproof"
)

// The seed's registrations (config/seed/) reach the seed part's multi-tenant server, which shoot
// kube-apiservers reach as well: the seed proves itself there as a tenant does, by a proof in
// the path (tenantproof.SeedPath), under the seed's tenant proof keys. A registration cannot
// carry the proof in config/, which knows no key, and a `ko apply` would reset any path this
// function wrote into a field config/ names. So a seed registration names no path: its
// annotation AnnotationSeedPaths says each webhook's path, and this function writes it, with the
// seed's proof in front, beside the CA bundle (and again once a newer key signs).

// AnnotationSeedPaths is the annotation of a seed registration that names each of its webhooks'
// path on the server, a JSON object of webhook name to path.
const AnnotationSeedPaths = "gardener-knative.io/seed-paths"

// SeedPaths are the paths a registration's AnnotationSeedPaths names, by webhook name; nil
// without the annotation.
func SeedPaths(obj client.Object) (map[string]string, error) {
	raw, ok := obj.GetAnnotations()[AnnotationSeedPaths]
	if !ok {
		return nil, nil
	}
	var paths map[string]string
	if err := json.Unmarshal([]byte(raw), &paths); err != nil {
		return nil, fmt.Errorf("the annotation %s is no JSON object of webhook names to paths: %w", AnnotationSeedPaths, err)
	}
	for name, path := range paths {
		if len(path) < 2 || path[0] != '/' {
			return nil, fmt.Errorf("the annotation %s gives the webhook %s the path %q, which is not absolute", AnnotationSeedPaths, name, path)
		}
	}
	return paths, nil
}

// seedPathsOf is what the registration's annotated webhooks' client configurations should
// point at, by webhook name: the path of its annotation below the seed with the seed's signing key
// (made, the seed's first, when there is none yet), as a Service's path or in its url. Nil
// without the annotation.
func (r *Reconciler) seedPathsOf(ctx context.Context, req function.Request, obj client.Object) (map[string]func(*admissionregistrationv1.WebhookClientConfig), error) {
	paths, err := SeedPaths(obj)
	if err != nil {
		return nil, function.Terminal(fmt.Errorf("%s %s: %w", r.Kind.name, obj.GetName(), err))
	}
	if paths == nil {
		return nil, nil
	}
	if r.Config.Namespace != function.Seed.Namespace() {
		return nil, function.Terminal(fmt.Errorf("%s %s: only the seed part's servers take the seed's proof, not those of %s", r.Kind.name, obj.GetName(), r.Config.Namespace))
	}
	key, err := tenantproof.SigningKey(ctx, keyStore{req.Reader, r.Source.Writer}, r.Config.Namespace, r.Clock.Now())
	if err != nil {
		return nil, err
	}
	set := map[string]func(*admissionregistrationv1.WebhookClientConfig){}
	for name, cc := range namedClientConfigs(obj) {
		path, ok := paths[name]
		if !ok {
			continue
		}
		signed := tenantproof.SeedPath(key, path)
		switch {
		case cc.Service != nil:
			set[name] = func(cc *admissionregistrationv1.WebhookClientConfig) { cc.Service.Path = &signed }
		case cc.URL != nil:
			u, err := url.Parse(*cc.URL)
			if err != nil {
				return nil, function.Terminal(fmt.Errorf("%s %s: the webhook %s's url: %w", r.Kind.name, obj.GetName(), name, err))
			}
			u.Path, u.RawPath = signed, ""
			set[name] = func(cc *admissionregistrationv1.WebhookClientConfig) { cc.URL = new(u.String()) }
		}
	}
	return set, nil
}

// keyStore reads with the reconcile's reader and creates with the optimistic writer.
type keyStore struct {
	client.Reader
	writer function.Writer
}

func (k keyStore) Create(ctx context.Context, obj client.Object, _ ...client.CreateOption) error {
	return k.writer.Create(ctx, obj)
}

// namedClientConfigs are the client configurations of a registration's webhooks, by name.
func namedClientConfigs(obj client.Object) map[string]*admissionregistrationv1.WebhookClientConfig {
	configs := map[string]*admissionregistrationv1.WebhookClientConfig{}
	switch o := obj.(type) {
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		for i := range o.Webhooks {
			configs[o.Webhooks[i].Name] = &o.Webhooks[i].ClientConfig
		}
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		for i := range o.Webhooks {
			configs[o.Webhooks[i].Name] = &o.Webhooks[i].ClientConfig
		}
	}
	return configs
}
