package samples

import (
	"context"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csrcontroller "github.com/gardener-knative/gardener-knative/pkg/controller/certificatesigningrequest"
)

// certificatesigningrequestSamples creates two CertificateSigningRequests as the landscape's
// admin (who may create certificatesigningrequests/seedclient): "sample-gardenlet" asks for
// exactly a gardenlet's client certificate and is approved by the first sweep; "sample-forged"
// asks for another organization and is left alone (counted in
// gardener_knative_csr_not_approved_total{reason="organization"}).
func certificatesigningrequestSamples(ctx context.Context, c client.Client) error {
	usages := []certificatesv1.KeyUsage{certificatesv1.UsageKeyEncipherment, certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	for name, tmpl := range map[string]csrcontroller.RequestTemplate{
		"sample-gardenlet": {CommonName: "gardener.cloud:system:seed:local", Organizations: []string{"gardener.cloud:system:seeds"}},
		"sample-forged":    {CommonName: "gardener.cloud:system:seed:local", Organizations: []string{"gardener.cloud:system:shoots"}},
	} {
		request, err := csrcontroller.NewRequestPEM(tmpl)
		if err != nil {
			return err
		}
		csr := &certificatesv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       certificatesv1.CertificateSigningRequestSpec{Request: request, SignerName: certificatesv1.KubeAPIServerClientSignerName, Usages: usages},
		}
		if err := c.Create(ctx, csr); err != nil {
			return err
		}
	}
	return nil
}
