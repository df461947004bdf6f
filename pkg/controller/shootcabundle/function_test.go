package shootcabundle

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gardener-knative/gardener-knative/pkg/controller/webhookcertificates"
)

// A tenant records, per serving certificate, the digest of the bundle its shoot now carries, or
// that it is hibernated (its shoot was not read).
func TestRecords(t *testing.T) {
	certificates := []webhookcertificates.Certificate{{Secret: "a-tls", Bundle: []byte("a")}, {Secret: "b-tls", Bundle: []byte("b")}}
	assert.Equal(t, map[string]string{
		webhookcertificates.AnnotationTenantBundle("a-tls"): webhookcertificates.Digest([]byte("a")),
		webhookcertificates.AnnotationTenantBundle("b-tls"): webhookcertificates.Digest([]byte("b")),
	}, Records(certificates, false))
	assert.Equal(t, map[string]string{
		webhookcertificates.AnnotationTenantBundle("a-tls"): webhookcertificates.TenantHibernated,
		webhookcertificates.AnnotationTenantBundle("b-tls"): webhookcertificates.TenantHibernated,
	}, Records(certificates, true))
	assert.Empty(t, Records(nil, false), "nothing issued yet: nothing to record")
}
