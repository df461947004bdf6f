package main

import (
	"bytes"
	"context"
	"fmt"

	"github.com/andybalholm/brotli"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// workload is what every shoot of a side holds: ManagedResources shaped like a shoot's real
// ones (ConfigMaps, a Secret, a ServiceAccount, RBAC, a Service and a Deployment each), every
// compressedEvery-th one's Secret Brotli-compressed, as gardenlet writes the big ones.
type workload struct {
	managedResources int
	// side names the side's objects (its namespace in each shoot, its cluster-scoped names),
	// so that the sides never touch each other's objects.
	side string
}

// objectsPerManagedResource is what one ManagedResource holds.
const objectsPerManagedResource = 10

// compressedEvery: every fourth ManagedResource's Secret is Brotli-compressed.
const compressedEvery = 4

// driftedPerManagedResource are the ConfigMaps of each ManagedResource the drift test edits.
const driftedPerManagedResource = 2

// shootNamespace is where the side's namespaced objects live in every shoot.
func (w workload) shootNamespace() string { return "bench-" + w.side }

func (w workload) managedResourceName(i int) string { return fmt.Sprintf("%s-%02d", w.side, i) }

func (w workload) configMapName(i, j int) string {
	return fmt.Sprintf("%s-%02d-config-%d", w.side, i, j)
}

// desiredData is what every managed ConfigMap holds; the drift test changes it.
var desiredData = map[string]string{"config.yaml": "replicas: 1\nlevel: info\n"}

// objects are the objects of ManagedResource i.
func (w workload) objects(i int) []runtime.Object {
	ns := w.shootNamespace()
	name := w.managedResourceName(i)
	labels := map[string]string{"app": name}
	meta := func(n string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ns, Name: n, Labels: labels}
	}
	cluster := func(n string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: "bench:" + n, Labels: labels} }
	var objs []runtime.Object
	for j := range driftedPerManagedResource {
		objs = append(objs, &corev1.ConfigMap{TypeMeta: typeMeta("v1", "ConfigMap"), ObjectMeta: meta(w.configMapName(i, j)), Data: desiredData})
	}
	rule := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}}
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}
	objs = append(objs,
		&corev1.Secret{TypeMeta: typeMeta("v1", "Secret"), ObjectMeta: meta(name + "-credentials"), StringData: map[string]string{"token": "bench-" + name}},
		&corev1.ServiceAccount{TypeMeta: typeMeta("v1", "ServiceAccount"), ObjectMeta: meta(name), AutomountServiceAccountToken: ptr.To(false)},
		&rbacv1.Role{TypeMeta: typeMeta("rbac.authorization.k8s.io/v1", "Role"), ObjectMeta: meta(name), Rules: rule},
		&rbacv1.RoleBinding{TypeMeta: typeMeta("rbac.authorization.k8s.io/v1", "RoleBinding"), ObjectMeta: meta(name),
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}, Subjects: subject},
		&rbacv1.ClusterRole{TypeMeta: typeMeta("rbac.authorization.k8s.io/v1", "ClusterRole"), ObjectMeta: cluster(name), Rules: rule},
		&rbacv1.ClusterRoleBinding{TypeMeta: typeMeta("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"), ObjectMeta: cluster(name),
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "bench:" + name}, Subjects: subject},
		&corev1.Service{TypeMeta: typeMeta("v1", "Service"), ObjectMeta: meta(name), Spec: corev1.ServiceSpec{
			Selector: labels, Ports: []corev1.ServicePort{{Name: "metrics", Port: 8080, TargetPort: intstr.FromInt32(8080)}}}},
		w.deployment(meta(name), labels),
	)
	return objs
}

// deployment is a shoot component's Deployment. No kube-controller-manager runs beside the
// shoots' kube-apiservers, so it never becomes available: both sides are told to skip its
// health check, as they would a component that reports its health otherwise.
func (w workload) deployment(meta metav1.ObjectMeta, labels map[string]string) *appsv1.Deployment {
	meta.Annotations = map[string]string{resourcesv1alpha1.SkipHealthCheck: "true"}
	return &appsv1.Deployment{TypeMeta: typeMeta("apps/v1", "Deployment"), ObjectMeta: meta, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](1),
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{
				ServiceAccountName: meta.Name,
				Containers: []corev1.Container{{
					Name: "component", Image: "registry.local/bench/component:v1.0.0",
					Args:      []string{"--config=/etc/config/config.yaml", "--v=2"},
					Resources: corev1.ResourceRequirements{},
				}},
			},
		},
	}}
}

func typeMeta(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

// secret is the Secret of ManagedResource i in the seed namespace ns.
func (w workload) secret(ns string, i int) (*corev1.Secret, error) {
	var doc bytes.Buffer
	for _, obj := range w.objects(i) {
		data, err := yaml.Marshal(obj)
		if err != nil {
			return nil, err
		}
		doc.WriteString("---\n")
		doc.Write(data)
	}
	key, data := "objects.yaml", doc.Bytes()
	if i%compressedEvery == 0 {
		var compressed bytes.Buffer
		writer := brotli.NewWriter(&compressed)
		if _, err := writer.Write(data); err != nil {
			return nil, err
		}
		if err := writer.Close(); err != nil {
			return nil, err
		}
		key, data = "objects.yaml"+resourcesv1alpha1.BrotliCompressionSuffix, compressed.Bytes()
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "managedresource-" + w.managedResourceName(i)},
		Data:       map[string][]byte{key: data},
	}, nil
}

// create writes the side's workload for one shoot: its namespace in the shoot, and its
// ManagedResources and their Secrets in the seed namespace ns.
func (w workload) create(ctx context.Context, seed, shoot client.Client, ns string) error {
	if err := shoot.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.shootNamespace()}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	for i := range w.managedResources {
		secret, err := w.secret(ns, i)
		if err != nil {
			return err
		}
		if err := seed.Create(ctx, secret); err != nil {
			return err
		}
		if err := seed.Create(ctx, &resourcesv1alpha1.ManagedResource{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: w.managedResourceName(i)},
			Spec:       resourcesv1alpha1.ManagedResourceSpec{SecretRefs: []corev1.LocalObjectReference{{Name: secret.Name}}},
		}); err != nil {
			return err
		}
	}
	return nil
}
