// Package tenanttest provides a seed's tenant access objects for unit tests of code that resolves
// tenants (pkg/tenant/clients and its users), without a kube-apiserver.
package tenanttest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/tenant"
)

// CA is a self-signed CA certificate in PEM: what a tenant's kubeconfig names as its CA.
func CA(t testing.TB) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// Kubeconfig is a generic token kubeconfig as gardenlet writes it: a server and CA, and a user
// whose token file exists only in the shoot's pods.
func Kubeconfig(t testing.TB, server string, ca []byte) []byte {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["shoot"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	kc.AuthInfos["shoot"] = &clientcmdapi.AuthInfo{TokenFile: "/var/run/secrets/gardener.cloud/shoot/generic-kubeconfig/token"}
	kc.Contexts["shoot"] = &clientcmdapi.Context{Cluster: "shoot", AuthInfo: "shoot"}
	kc.CurrentContext = "shoot"
	data, err := clientcmd.Write(*kc)
	require.NoError(t, err)
	return data
}

// SeedIdentity is the cluster identity of the seed Seed describes.
const SeedIdentity = "seed-identity"

// Shoot is the Shoot of tenant t (shoot--<project>--<name>) as a Cluster holds it: one worker
// pool without taints, the default scheduling profile and feature gates, the internal API
// server domain advertised. Tests change it to describe other shoots.
func Shoot(t tenant.Name) *gardencorev1beta1.Shoot {
	project, name := "project", string(t)
	if parts := strings.SplitN(strings.TrimPrefix(string(t), tenant.DefaultPrefix), "--", 2); len(parts) == 2 {
		project, name = parts[0], parts[1]
	}
	return &gardencorev1beta1.Shoot{
		TypeMeta:   metav1.TypeMeta{APIVersion: gardencorev1beta1.SchemeGroupVersion.String(), Kind: "Shoot"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "garden-" + project, Name: name},
		Spec: gardencorev1beta1.ShootSpec{
			Provider: gardencorev1beta1.Provider{Type: "local", Workers: []gardencorev1beta1.Worker{{Name: "worker", Minimum: 1, Maximum: 2}}},
		},
		Status: gardencorev1beta1.ShootStatus{
			TechnicalID: string(t),
			AdvertisedAddresses: []gardencorev1beta1.ShootAdvertisedAddress{
				{Name: "external", URL: "https://api." + name + "." + project + ".external.local.gardener.cloud"},
				{Name: "internal", URL: "https://" + APIServerHost(t)},
			},
		},
	}
}

// APIServerHost is the internal API server domain Shoot(t) advertises.
func APIServerHost(t tenant.Name) string {
	return "api." + strings.ReplaceAll(strings.TrimPrefix(string(t), tenant.DefaultPrefix), "--", ".") + ".internal.local.gardener.cloud"
}

// SeedObject is the Seed every Cluster of Cluster holds: its identity is SeedIdentity.
func SeedObject() *gardencorev1beta1.Seed {
	return &gardencorev1beta1.Seed{
		TypeMeta:   metav1.TypeMeta{APIVersion: gardencorev1beta1.SchemeGroupVersion.String(), Kind: "Seed"},
		ObjectMeta: metav1.ObjectMeta{Name: "seed"},
		Status:     gardencorev1beta1.SeedStatus{ClusterIdentity: ptr.To(SeedIdentity)},
	}
}

// Cluster is the Cluster gardenlet keeps for tenant t: named after its namespace, annotated with
// the name of its generic token kubeconfig Secret, holding the Shoot (Shoot(t) when nil) and the
// Seed (SeedObject()), and labelled enrolled with this project (tenant.EnrolledLabel), as
// pkg/enrolment labels it.
func Cluster(t tenant.Name, kubeconfigSecret string, shoot *gardencorev1beta1.Shoot) (*unstructured.Unstructured, error) {
	if shoot == nil {
		shoot = Shoot(t)
	}
	spec := map[string]any{}
	for key, obj := range map[string]any{"shoot": shoot, "seed": SeedObject(), "cloudProfile": map[string]any{"apiVersion": gardencorev1beta1.SchemeGroupVersion.String(), "kind": "CloudProfile"}} {
		data, err := json.Marshal(obj)
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, err
		}
		spec[key] = m
	}
	cluster := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	cluster.SetAPIVersion("extensions.gardener.cloud/v1alpha1")
	cluster.SetKind("Cluster")
	cluster.SetName(string(t))
	cluster.SetAnnotations(map[string]string{"generic-token-kubeconfig.secret.gardener.cloud/name": kubeconfigSecret})
	cluster.SetLabels(map[string]string{tenant.EnrolledLabel: "true"})
	return cluster, nil
}

// Seed is a seed's Clusters and Secrets as a client.Reader that counts its reads; Fail makes
// every read fail.
type Seed struct {
	// Objects are Secrets, and Clusters (unstructured, see Cluster), by key.
	Objects map[client.ObjectKey]client.Object
	Reads   int
	Fail    error
}

// Enrolled is a seed holding access for tenants, each with its kube-apiserver at server and ca as
// its CA; each tenant's token is "token-of-<tenant>".
func Enrolled(t testing.TB, server string, ca []byte, tenants ...tenant.Name) *Seed {
	s := &Seed{Objects: map[client.ObjectKey]client.Object{}}
	for _, tn := range tenants {
		ns := string(tn)
		cluster, err := Cluster(tn, "generic-token-kubeconfig-1", nil)
		require.NoError(t, err)
		s.Objects[client.ObjectKey{Name: ns}] = cluster
		s.Objects[client.ObjectKey{Namespace: ns, Name: "generic-token-kubeconfig-1"}] = &corev1.Secret{Data: map[string][]byte{"kubeconfig": Kubeconfig(t, server, ca)}}
		s.Objects[client.ObjectKey{Namespace: ns, Name: tenant.DefaultAccessSecret}] = &corev1.Secret{Data: map[string][]byte{"token": []byte("token-of-" + ns)}}
	}
	return s
}

func (s *Seed) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	s.Reads++
	if s.Fail != nil {
		return s.Fail
	}
	stored, ok := s.Objects[key]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{}, key.Name)
	}
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		*o = *stored.(*unstructured.Unstructured).DeepCopy()
	case *corev1.Secret:
		*o = *stored.(*corev1.Secret).DeepCopy()
	default:
		return fmt.Errorf("unexpected %T", obj)
	}
	return nil
}

func (s *Seed) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return fmt.Errorf("the seed is never listed")
}
