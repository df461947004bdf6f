package testenv

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	kubernetesscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// ManifestRBAC reads the ServiceAccounts, ClusterRoles, Roles and bindings of a manifest of
// config/: the webhook servers' RBAC is written there by hand (config/seed/grm-webhooks.yaml), not
// derived from a declaration, and the suites serve them with exactly it.
func ManifestRBAC(file string) ([]client.Object, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	decode := kubernetesscheme.Codecs.UniversalDeserializer().Decode
	var objects []client.Object
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objects, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		switch meta.GroupVersionKind() {
		case corev1.SchemeGroupVersion.WithKind("ServiceAccount"),
			rbacv1.SchemeGroupVersion.WithKind("ClusterRole"), rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"),
			rbacv1.SchemeGroupVersion.WithKind("Role"), rbacv1.SchemeGroupVersion.WithKind("RoleBinding"):
		default:
			continue
		}
		obj, _, err := decode(doc, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", file, meta.Kind, err)
		}
		objects = append(objects, obj.(client.Object))
	}
}

// ApplyRBAC creates the objects (ManifestRBAC's) in the control plane, with their namespaces,
// updating those that exist.
func (e *Env) ApplyRBAC(ctx context.Context, objects []client.Object) error {
	for _, obj := range objects {
		if ns := obj.GetNamespace(); ns != "" {
			if err := client.IgnoreAlreadyExists(e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})); err != nil {
				return err
			}
		}
		obj = obj.DeepCopyObject().(client.Object)
		err := e.Client.Create(ctx, obj)
		if apierrors.IsAlreadyExists(err) {
			existing := obj.DeepCopyObject().(client.Object)
			if err := e.Client.Get(ctx, client.ObjectKeyFromObject(obj), existing); err != nil {
				return err
			}
			obj.SetResourceVersion(existing.GetResourceVersion())
			err = e.Client.Update(ctx, obj)
		}
		if err != nil {
			return fmt.Errorf("applying %T %s: %w", obj, obj.GetName(), err)
		}
	}
	return nil
}

// ServiceAccountUser is the user name of the one ServiceAccount among objects (ManifestRBAC's),
// as kube-apiserver authenticates its tokens.
func ServiceAccountUser(objects []client.Object) (string, error) {
	var users []string
	for _, obj := range objects {
		if sa, ok := obj.(*corev1.ServiceAccount); ok {
			users = append(users, serviceaccount.MakeUsername(sa.Namespace, sa.Name))
		}
	}
	if len(users) != 1 {
		return "", fmt.Errorf("%d ServiceAccounts, want one: %v", len(users), users)
	}
	return users[0], nil
}

// ManifestClient applies the RBAC of the manifest file (ManifestRBAC) and returns a client of
// the control plane as its ServiceAccount: a request the manifest does not allow is refused as
// in a cluster, and hack/leastprivilege counts the client's requests (FunctionClient's).
func (e *Env) ManifestClient(ctx context.Context, file string) (client.Client, error) {
	objects, err := ManifestRBAC(file)
	if err != nil {
		return nil, err
	}
	user, err := ServiceAccountUser(objects)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if err := e.ApplyRBAC(ctx, objects); err != nil {
		return nil, err
	}
	c, _, err := e.FunctionClient(user)
	return c, err
}

// WebhookManifests maps each webhook to the manifest of config/ (a file of a part, dir/<part>/) whose
// Knative Service serves it: the one whose container's WEBHOOKS lists it. Its ServiceAccount and
// RBAC (ManifestRBAC) are the webhook server's.
func WebhookManifests(dir string) (map[string]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*", "*.yaml"))
	if err != nil {
		return nil, err
	}
	manifests := map[string]string{}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := reader.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", file, err)
			}
			var service struct {
				Kind string `json:"kind"`
				Spec struct {
					Template struct {
						Spec struct {
							Containers []corev1.Container `json:"containers"`
						} `json:"spec"`
					} `json:"template"`
				} `json:"spec"`
			}
			if err := yaml.Unmarshal(doc, &service); err != nil {
				return nil, fmt.Errorf("%s: %w", file, err)
			}
			if service.Kind != "Service" {
				continue
			}
			for _, c := range service.Spec.Template.Spec.Containers {
				for _, env := range c.Env {
					if env.Name != "WEBHOOKS" {
						continue
					}
					for _, name := range strings.Split(env.Value, ",") {
						name = strings.TrimSpace(name)
						if other, ok := manifests[name]; ok && other != file {
							return nil, fmt.Errorf("webhook %s is served by %s and %s", name, other, file)
						}
						manifests[name] = file
					}
				}
			}
		}
	}
	return manifests, nil
}
