// Package webhookaccess is the webhook servers' own read-only identity in a tenant's shoot:
// the ServiceAccount kube-system/gardener-knative-grm-webhooks, its RBAC there
// (config/shoot/access-grm-webhooks.yaml) and the token requestor Secret in the tenant's
// namespace of the seed whose token the servers read (TENANT_ACCESS_SECRET). Gardener's resource
// manager of one shoot holds that shoot's cluster-admin token; the servers of every shoot of a
// seed only ever read, so they hold only what they read (docs/deployment.md, "Who may read a
// tenant's Secrets"). The enrolment applies it (pkg/enrolment), the token requestor keeps the
// token, testenv.Enroll does what both do.
package webhookaccess

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/config"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
)

const (
	// SecretName is the token requestor Secret in a tenant's namespace of the seed that holds
	// the servers' token for the tenant's shoot (config/seed/grm-webhooks.yaml's
	// TENANT_ACCESS_SECRET).
	SecretName = "shoot-access-gardener-knative-grm-webhooks"
	// ServiceAccountName is the servers' ServiceAccount in the shoot's kube-system.
	ServiceAccountName = "gardener-knative-grm-webhooks"
	// manifest is its RBAC in the shoot.
	manifest = "shoot/access-grm-webhooks.yaml"
)

// Secret is the token requestor Secret of the servers' identity in tenant t's namespace, without
// a token: the token requestor (class shoot: GRM's, or this project's function) creates the
// ServiceAccount in the shoot and writes the token (Gardener's shoot access Secrets).
func Secret(t tenant.Name) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: string(t), Name: SecretName,
			Labels: map[string]string{
				resourcesv1alpha1.ResourceManagerPurpose: resourcesv1alpha1.LabelPurposeTokenRequest,
				resourcesv1alpha1.ResourceManagerClass:   resourcesv1alpha1.ResourceManagerClassShoot,
				"app.kubernetes.io/part-of":              "gardener-knative",
			},
			Annotations: map[string]string{
				resourcesv1alpha1.ServiceAccountName:      ServiceAccountName,
				resourcesv1alpha1.ServiceAccountNamespace: metav1.NamespaceSystem,
			},
		},
		Type: corev1.SecretTypeOpaque,
	}
}

// ShootObjects are the servers' RBAC in the shoot (config/shoot/access-grm-webhooks.yaml).
func ShootObjects() ([]client.Object, error) {
	data, err := fs.ReadFile(config.Shoot, manifest)
	if err != nil {
		return nil, err
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []client.Object
	for {
		var doc map[string]any
		if err := decoder.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("%s: %w", manifest, err)
		}
		if len(doc) == 0 {
			continue
		}
		var obj client.Object
		switch kind, _ := doc["kind"].(string); kind {
		case "ClusterRole":
			obj = &rbacv1.ClusterRole{}
		case "ClusterRoleBinding":
			obj = &rbacv1.ClusterRoleBinding{}
		case "Role":
			obj = &rbacv1.Role{}
		case "RoleBinding":
			obj = &rbacv1.RoleBinding{}
		default:
			return nil, fmt.Errorf("%s: a %s is not RBAC", manifest, kind)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(doc, obj); err != nil {
			return nil, fmt.Errorf("%s: %w", manifest, err)
		}
		out = append(out, obj)
	}
}

// ServiceAccount is the servers' ServiceAccount in the shoot (the token requestor creates it;
// the enrolment deletes it when it hands the shoot back).
func ServiceAccount() *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: ServiceAccountName}}
}
