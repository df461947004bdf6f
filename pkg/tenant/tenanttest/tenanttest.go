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
	"encoding/pem"
	"fmt"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
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

// Seed is a seed's Clusters and Secrets as a client.Reader that counts its reads; Fail makes
// every read fail.
type Seed struct {
	// Objects are Secrets, and Clusters as PartialObjectMetadata, by key.
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
		s.Objects[client.ObjectKey{Name: ns}] = &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Name: ns, Annotations: map[string]string{"generic-token-kubeconfig.secret.gardener.cloud/name": "generic-token-kubeconfig-1"},
		}}
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
	case *metav1.PartialObjectMetadata:
		o.ObjectMeta = *stored.(*metav1.PartialObjectMetadata).ObjectMeta.DeepCopy()
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
