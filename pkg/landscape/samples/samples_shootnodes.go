package samples

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csrcontroller "github.com/gardener-knative/gardener-knative/pkg/controller/certificatesigningrequest"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
	"github.com/gardener-knative/gardener-knative/pkg/landscape"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/tokeninvalidator"
)

// The shoot's samples for GRM's node, token invalidator and CSR approver functions, created by
// the live view in the landscape's shoot (which has no kubelet: the view plays it, marking the
// critical Pod ready a while after its creation and requesting the Node's serving certificate).
const (
	NodeName           = "demo-node"
	sampleCriticalPod  = "demo-critical-component"
	sampleNoAutomount  = "demo-no-automount"
	sampleStaticToken  = "demo-no-automount-token"
	criticalPodReadyIn = 15 * time.Second
	sampleNodeIP       = "10.250.0.10"
	sampleMachine      = "demo-machine"
	sampleCSR          = "demo-node-serving"
)

// ShootNodes is the live view's line following them. seed holds the Machines; kubelet is the
// shoot's API as the sample Node's kubelet (system:node:demo-node), which requests its serving
// certificate.
type ShootNodes struct {
	Shoot, Seed, Kubelet client.Client
	created              time.Time
}

// createTimeout bounds the creation of the samples: their Pod passes the shoot's admission
// webhooks, whose server may answer its first request slowly on a busy machine.
const createTimeout = 10 * time.Second

func (s *ShootNodes) Line() string {
	if s.created.IsZero() {
		ctx, cancel := context.WithTimeout(context.Background(), createTimeout)
		err := s.Create(ctx)
		cancel()
		if err != nil {
			return "GRM node: creating samples in the shoot … (" + err.Error() + ")"
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return "GRM node: " + s.taint(ctx) + "\n" + "GRM token invalidator: " + s.token(ctx) + "\n" + "GRM CSR approver: " + s.csr(ctx)
}

// Create creates the samples; those that exist already are left as they are, so a failed
// creation may be repeated.
func (s *ShootNodes) Create(ctx context.Context) error {
	if err := s.create(ctx); err != nil {
		return err
	}
	s.created = time.Now()
	return nil
}

func (s *ShootNodes) create(ctx context.Context) error {
	nodes := []*corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: NodeName}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: v1beta1constants.TaintNodeCriticalComponentsNotReady, Effect: corev1.TaintEffectNoSchedule}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: NodeName + "-2"}},
		{ObjectMeta: metav1.ObjectMeta{Name: NodeName + "-3"}},
	}
	objs := []client.Object{
		&corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: sampleCriticalPod, Labels: map[string]string{v1beta1constants.LabelNodeCriticalComponent: "true"}},
			Spec:       corev1.PodSpec{NodeName: NodeName, Containers: []corev1.Container{{Name: "agent", Image: "registry.local/agent:1"}}},
		},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: sampleNoAutomount}, AutomountServiceAccountToken: ptr.To(false)},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: sampleStaticToken, Annotations: map[string]string{corev1.ServiceAccountNameKey: sampleNoAutomount}},
			Type:       corev1.SecretTypeServiceAccountToken,
			Data:       map[string][]byte{corev1.ServiceAccountTokenKey: []byte("a-static-token")},
		},
	}
	for _, n := range nodes {
		objs = append(objs, n)
	}
	for _, obj := range objs {
		if err := client.IgnoreAlreadyExists(s.Shoot.Create(ctx, obj)); err != nil {
			return err
		}
	}
	// The Node's addresses, which its serving certificate names, and its Machine in the seed.
	node := nodes[0]
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: NodeName}, {Type: corev1.NodeInternalIP, Address: sampleNodeIP}}
	if err := setStatus(ctx, s.Shoot, node); err != nil {
		return err
	}
	machine := &unstructured.Unstructured{}
	machine.SetGroupVersionKind(kinds.Machine.GroupVersionKind)
	machine.SetNamespace(string(landscape.Tenant))
	machine.SetName(sampleMachine)
	machine.SetLabels(map[string]string{"node": NodeName})
	if err := client.IgnoreAlreadyExists(s.Seed.Create(ctx, machine)); err != nil {
		return err
	}
	// The kubelet may request certificates (kubeadm binds it so; this shoot has no Node authorizer).
	if err := client.IgnoreAlreadyExists(s.Shoot.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-node-bootstrapper"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node-bootstrapper"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "system:node:" + NodeName}},
	})); err != nil {
		return err
	}
	request, err := csrcontroller.NewRequestPEM(csrcontroller.RequestTemplate{
		CommonName: "system:node:" + NodeName, Organizations: []string{"system:nodes"},
		DNSNames: []string{NodeName}, IPAddresses: []net.IP{net.ParseIP(sampleNodeIP)},
	})
	if err != nil {
		return err
	}
	return client.IgnoreAlreadyExists(s.Kubelet.Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: sampleCSR},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request: request, SignerName: certificatesv1.KubeletServingSignerName,
			Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth},
		},
	}))
}

// csr follows the kubelet's serving certificate request.
func (s *ShootNodes) csr(ctx context.Context) string {
	csr := &certificatesv1.CertificateSigningRequest{}
	if err := s.Shoot.Get(ctx, client.ObjectKey{Name: sampleCSR}, csr); err != nil {
		return "kubelet-serving CSR of " + NodeName + " …"
	}
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved:
			return fmt.Sprintf("kubelet-serving CSR %s of %s (Machine %s/%s in the seed) approved ✓ (%s)", sampleCSR, NodeName, landscape.Tenant, sampleMachine, c.Message)
		case certificatesv1.CertificateDenied:
			return fmt.Sprintf("kubelet-serving CSR %s of %s denied: %s", sampleCSR, NodeName, c.Message)
		}
	}
	return "kubelet-serving CSR " + sampleCSR + " of " + NodeName + " pending …"
}

// taint follows the critical-components taint of the sample Node and the delays of all three.
func (s *ShootNodes) taint(ctx context.Context) string {
	node := &corev1.Node{}
	if err := s.Shoot.Get(ctx, client.ObjectKey{Name: NodeName}, node); err != nil {
		return "Node " + NodeName + " …"
	}
	tainted := false
	for _, t := range node.Spec.Taints {
		tainted = tainted || t.Key == v1beta1constants.TaintNodeCriticalComponentsNotReady
	}
	var step string
	switch {
	case !tainted:
		step = "critical component ready → taint removed ✓"
	case time.Since(s.created) < criticalPodReadyIn:
		step = fmt.Sprintf("tainted until its critical component is ready (the view makes it ready in %s) …", (criticalPodReadyIn - time.Since(s.created)).Round(time.Second))
	default:
		step = "critical component ready → taint removal …"
		s.markReady(ctx)
	}
	nodes := &corev1.NodeList{}
	var delays []string
	if err := s.Shoot.List(ctx, nodes); err == nil {
		for _, n := range nodes.Items {
			if d := n.Annotations[v1beta1constants.AnnotationNodeAgentReconciliationDelay]; d != "" {
				delays = append(delays, n.Name+"="+d)
			}
		}
	}
	if len(delays) == 0 {
		return "Node " + NodeName + ": " + step + "; reconciliation delays …"
	}
	return "Node " + NodeName + ": " + step + "; reconciliation delays " + strings.Join(delays, ", ") + " ✓"
}

// markReady plays the kubelet: the critical Pod's Ready condition.
func (s *ShootNodes) markReady(ctx context.Context) {
	pod := &corev1.Pod{}
	if err := s.Shoot.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: sampleCriticalPod}, pod); err != nil {
		return
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return
		}
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()})
	_ = setStatus(ctx, s.Shoot, pod)
}

// token follows the static token of the ServiceAccount that opts out of automounting.
func (s *ShootNodes) token(ctx context.Context) string {
	secret := &corev1.Secret{}
	if err := s.Shoot.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: sampleStaticToken}, secret); err != nil {
		return "static token of kube-system/" + sampleNoAutomount + " …"
	}
	if secret.Labels[tokeninvalidator.LabelConsider] != "true" {
		return "static token of kube-system/" + sampleNoAutomount + " (automountServiceAccountToken: false) …"
	}
	return "static token of kube-system/" + sampleNoAutomount + " (automountServiceAccountToken: false) labelled for the token-invalidator webhook ✓"
}
