package samples

import (
	"context"
	"fmt"
	"strings"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/landscape"
)

// The ManagedResource sample: in the seed's namespace of the landscape's shoot, a Secret with a
// Namespace, a ConfigMap and a Deployment for the shoot, and the ManagedResource naming it.
const (
	// GRMName names the sample's ManagedResource and its Secret.
	GRMName            = "demo"
	grmSampleNamespace = "demo"
	grmSampleConfigMap = "demo-config"
	grmSampleValue     = "as the ManagedResource says"
)

var grmSampleManifest = `apiVersion: v1
kind: Namespace
metadata:
  name: ` + grmSampleNamespace + `
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: ` + grmSampleConfigMap + `
  namespace: ` + grmSampleNamespace + `
data:
  greeting: ` + grmSampleValue + `
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: demo
  namespace: ` + grmSampleNamespace + `
spec:
  replicas: 1
  selector:
    matchLabels: {app: demo}
  template:
    metadata:
      labels: {app: demo}
    spec:
      containers:
      - name: demo
        image: registry.local/demo:1
`

// grmSampleToken is the token requestor sample: a Secret in the seed asking for a token of the
// ServiceAccount kube-system/demo of the shoot.
const grmSampleToken = "demo-token"

// managedresourceSamples creates GRM's samples in the seed (the landscape's main control plane):
// the ManagedResource for GRM's functions to apply into the shoot, and a token requestor Secret.
func managedresourceSamples(ctx context.Context, c client.Client) error {
	ns := string(landscape.Tenant)
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Namespace: ns, Name: grmSampleToken,
		Labels: map[string]string{resourcesv1alpha1.ResourceManagerPurpose: resourcesv1alpha1.LabelPurposeTokenRequest, resourcesv1alpha1.ResourceManagerClass: resourcesv1alpha1.ResourceManagerClassShoot},
		Annotations: map[string]string{
			resourcesv1alpha1.ServiceAccountName: "demo", resourcesv1alpha1.ServiceAccountNamespace: metav1.NamespaceSystem,
			// Short-lived, so that its renewal shows within minutes.
			resourcesv1alpha1.ServiceAccountTokenExpirationDuration: "10m",
		},
	}}); client.IgnoreAlreadyExists(err) != nil {
		return err
	}
	if err := c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: GRMName},
		Data:       map[string][]byte{"objects.yaml": []byte(grmSampleManifest)},
	}); client.IgnoreAlreadyExists(err) != nil {
		return err
	}
	return client.IgnoreAlreadyExists(c.Create(ctx, &resourcesv1alpha1.ManagedResource{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: GRMName},
		Spec:       resourcesv1alpha1.ManagedResourceSpec{SecretRefs: []corev1.LocalObjectReference{{Name: GRMName}}},
	}))
}

// GRM is the live view's line following the ManagedResource sample: applied into the
// shoot, a manual edit of its ConfigMap (made once, by this line) reconciled back on the edit's
// own event, and its conditions.
type GRM struct {
	Seed, Shoot client.Client
	edited      time.Time
	// lastToken and tokens count the tokens the sample's Secret got (renewals).
	lastToken string
	tokens    int
}

func (g *GRM) Line() string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	mr := &resourcesv1alpha1.ManagedResource{}
	if err := g.Seed.Get(ctx, client.ObjectKey{Namespace: string(landscape.Tenant), Name: GRMName}, mr); err != nil {
		return "GRM: ManagedResource " + GRMName + " …"
	}
	steps := []string{fmt.Sprintf("ManagedResource %s/%s %s", mr.Namespace, mr.Name, conditionMark(mr, resourcesv1alpha1.ResourcesApplied))}
	cm := &corev1.ConfigMap{}
	err := g.Shoot.Get(ctx, client.ObjectKey{Namespace: grmSampleNamespace, Name: grmSampleConfigMap}, cm)
	switch {
	case apierrors.IsNotFound(err):
		steps = append(steps, "objects in shoot …")
	case err != nil:
		steps = append(steps, "shoot unreachable …")
	default:
		steps = append(steps, fmt.Sprintf("%d objects in shoot ✓", len(mr.Status.Resources)))
		steps = append(steps, g.drift(ctx, cm))
	}
	steps = append(steps, "healthy "+conditionMark(mr, resourcesv1alpha1.ResourcesHealthy))
	return "GRM: " + strings.Join(steps, " → ") + "\n" + g.token(ctx)
}

// token follows the token requestor sample: the token in the seed's Secret, and its renewals.
func (g *GRM) token(ctx context.Context) string {
	secret := &corev1.Secret{}
	if err := g.Seed.Get(ctx, client.ObjectKey{Namespace: string(landscape.Tenant), Name: grmSampleToken}, secret); err != nil || len(secret.Data["token"]) == 0 {
		return "GRM: token of the shoot's kube-system/demo …"
	}
	if string(secret.Data["token"]) != g.lastToken {
		g.lastToken = string(secret.Data["token"])
		g.tokens++
	}
	return fmt.Sprintf("GRM: token of the shoot's kube-system/demo ✓ (%d requested, next renewal at %s)", g.tokens, secret.Annotations[resourcesv1alpha1.ServiceAccountTokenRenewTimestamp])
}

// drift edits the ConfigMap by hand once, and then tells whether the function put it back.
func (g *GRM) drift(ctx context.Context, cm *corev1.ConfigMap) string {
	if g.edited.IsZero() {
		cm.Data["greeting"] = "edited by hand"
		if err := g.Shoot.Update(ctx, cm); err != nil {
			return "manual edit …"
		}
		g.edited = time.Now()
		return "manual edit made …"
	}
	if cm.Data["greeting"] == grmSampleValue {
		return "manual edit reverted ✓"
	}
	return fmt.Sprintf("manual edit pending (%s) …", time.Since(g.edited).Round(time.Second))
}

func conditionMark(mr *resourcesv1alpha1.ManagedResource, t gardencorev1beta1.ConditionType) string {
	for _, c := range mr.Status.Conditions {
		if c.Type == t {
			switch c.Status {
			case gardencorev1beta1.ConditionTrue:
				return "✓"
			case gardencorev1beta1.ConditionUnknown:
				return string(c.Status) + " (" + c.Reason + ") …" // not checked yet
			}
			return string(c.Status) + " (" + c.Reason + ")"
		}
	}
	return "…"
}
