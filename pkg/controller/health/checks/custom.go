package checks

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// The kinds of prometheus-operator, VPA and cert-management with a dedicated check. No typed API
// of theirs is at hand, so they are read unstructured and decoded into the few fields the checks
// read; only these versions are checked, as in gardener-resource-manager, whose scheme knows
// just these.
var (
	PrometheusKind            = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "Prometheus"}
	AlertmanagerKind          = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "Alertmanager"}
	VerticalPodAutoscalerKind = schema.GroupVersionKind{Group: "autoscaling.k8s.io", Version: "v1", Kind: "VerticalPodAutoscaler"}
	CertificateKind           = schema.GroupVersionKind{Group: "cert.gardener.cloud", Version: "v1alpha1", Kind: "Certificate"}
	IssuerKind                = schema.GroupVersionKind{Group: "cert.gardener.cloud", Version: "v1alpha1", Kind: "Issuer"}
)

// statusCondition holds the fields of a condition that the checks read; prometheus-operator,
// VPA and cert-management conditions all name them alike.
type statusCondition struct {
	Type               string `json:"type"`
	Status             string `json:"status"`
	Reason             string `json:"reason,omitempty"`
	Message            string `json:"message,omitempty"`
	ObservedGeneration int64  `json:"observedGeneration,omitempty"`
}

func conditionType(c statusCondition) string { return c.Type }

// monitoringObject is what the checks read of a Prometheus or an Alertmanager.
type monitoringObject struct {
	Spec struct {
		Replicas *int32 `json:"replicas,omitempty"`
	} `json:"spec"`
	Status struct {
		AvailableReplicas int32             `json:"availableReplicas"`
		UpdatedReplicas   int32             `json:"updatedReplicas"`
		Conditions        []statusCondition `json:"conditions,omitempty"`
	} `json:"status"`
}

// vpaObject is what the check reads of a VerticalPodAutoscaler.
type vpaObject struct {
	Status struct {
		Conditions []statusCondition `json:"conditions,omitempty"`
	} `json:"status"`
}

// issuerObject is what the checks read of an Issuer.
type issuerObject struct {
	Status struct {
		ObservedGeneration int64  `json:"observedGeneration,omitempty"`
		State              string `json:"state"`
	} `json:"status"`
}

// certificateObject is what the checks read of a Certificate.
type certificateObject struct {
	Status struct {
		ObservedGeneration int64             `json:"observedGeneration,omitempty"`
		State              string            `json:"state"`
		Conditions         []statusCondition `json:"conditions,omitempty"`
	} `json:"status"`
}

// decodeError marks an object that does not decode: Gardener's typed client fails to read such
// an object, so it is an error of the read, not a verdict on the object's health.
type decodeError struct{ err error }

func (e *decodeError) Error() string { return e.err.Error() }

// decode fails like decoding into the kind's typed API would on the fields read.
func decode[T any](u *unstructured.Unstructured) (*T, error) {
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return nil, &decodeError{fmt.Errorf("decoding %s %q: %w", u.GetKind(), u.GetName(), err)}
	}
	return out, nil
}

// Names of the conditions prometheus-operator sets on its workloads, and the state
// cert-management reports for a usable Certificate or Issuer.
const (
	monitoringAvailable  = "Available"
	monitoringReconciled = "Reconciled"
	certReady            = "Ready"
	vpaConfigUnsupported = "ConfigUnsupported"
)

// monitoringCondition requires the condition of type t to exist, to have been computed for the
// object's generation and to be True.
func monitoringCondition(m *monitoringObject, t string, generation int64) error {
	c := firstCondition(m.Status.Conditions, t, conditionType)
	switch {
	case c == nil:
		return conditionMissing(t)
	case c.ObservedGeneration < generation:
		return errors.New(generationOutdated(c.ObservedGeneration, generation))
	}
	return wrongConditionStatus(c.Type, string(corev1.ConditionTrue), c.Status, c.Reason, c.Message)
}

func checkMonitoring(u *unstructured.Unstructured) error {
	m, err := decode[monitoringObject](u)
	if err != nil {
		return err
	}
	if err := monitoringCondition(m, monitoringAvailable, u.GetGeneration()); err != nil {
		return err
	}
	if replicas := ptr.Deref(m.Spec.Replicas, 1); m.Status.AvailableReplicas < replicas {
		return fmt.Errorf("not enough available replicas (%d/%d)", m.Status.AvailableReplicas, replicas)
	}
	return nil
}

func monitoringProgressing(u *unstructured.Unstructured, kind string) (bool, string, error) {
	m, err := decode[monitoringObject](u)
	if err != nil {
		return false, "", err
	}
	if err := monitoringCondition(m, monitoringReconciled, u.GetGeneration()); err != nil {
		return true, err.Error(), nil
	}
	if desired := ptr.Deref(m.Spec.Replicas, 1); m.Status.UpdatedReplicas < desired {
		return true, replicasNotUpdated(m.Status.UpdatedReplicas, desired), nil
	}
	return false, kind + " is fully rolled out", nil
}

// CheckPrometheus requires Available to be True for the current generation and as many
// available replicas as .spec.replicas (default 1). The error also reports an object that does
// not decode.
func CheckPrometheus(u *unstructured.Unstructured) error { return checkMonitoring(u) }

// CheckAlertmanager is CheckPrometheus for the Alertmanager.
func CheckAlertmanager(u *unstructured.Unstructured) error { return checkMonitoring(u) }

// PrometheusProgressing reports a Prometheus whose Reconciled condition is missing, stale or not
// True, or whose updated replicas are fewer than .spec.replicas (default 1). The error reports
// only an object that does not decode.
func PrometheusProgressing(u *unstructured.Unstructured) (bool, string, error) {
	return monitoringProgressing(u, PrometheusKind.Kind)
}

// AlertmanagerProgressing is PrometheusProgressing for the Alertmanager.
func AlertmanagerProgressing(u *unstructured.Unstructured) (bool, string, error) {
	return monitoringProgressing(u, AlertmanagerKind.Kind)
}

// CheckVerticalPodAutoscaler fails a VPA only for a ConfigUnsupported condition that is not
// False. The observed generation is deliberately not compared (as in Gardener): VPAs deployed
// before the VPA components run would otherwise block the very rollout that brings them.
func CheckVerticalPodAutoscaler(u *unstructured.Unstructured) error {
	vpa, err := decode[vpaObject](u)
	if err != nil {
		return err
	}
	if c := firstCondition(vpa.Status.Conditions, vpaConfigUnsupported, conditionType); c != nil {
		return wrongConditionStatus(c.Type, string(corev1.ConditionFalse), c.Status, c.Reason, c.Message)
	}
	return nil
}

// CheckCertificate requires a Ready condition, if any, to be True and the state to be Ready.
func CheckCertificate(u *unstructured.Unstructured) error {
	cert, err := decode[certificateObject](u)
	if err != nil {
		return err
	}
	if c := firstCondition(cert.Status.Conditions, certReady, conditionType); c != nil {
		if err := wrongConditionStatus(c.Type, string(corev1.ConditionTrue), c.Status, c.Reason, c.Message); err != nil {
			return err
		}
	}
	if cert.Status.State != certReady {
		return fmt.Errorf("certificate state is %q (%q expected)", cert.Status.State, certReady)
	}
	return nil
}

// CheckIssuer requires the Issuer's state to be Ready.
func CheckIssuer(u *unstructured.Unstructured) error {
	issuer, err := decode[issuerObject](u)
	if err != nil {
		return err
	}
	if issuer.Status.State != certReady {
		return fmt.Errorf("issuer state is %q (%q expected)", issuer.Status.State, certReady)
	}
	return nil
}

// generationProgressing reports an object whose controller has not seen its generation: all
// that tells a cert-management rollout apart.
func generationProgressing(u *unstructured.Unstructured, observedGeneration int64, kind string) (bool, string) {
	if observedGeneration < u.GetGeneration() {
		return true, generationOutdated(observedGeneration, u.GetGeneration())
	}
	return false, kind + " is fully rolled out"
}

// CertificateProgressing reports a Certificate whose controller has not seen its generation.
// The error reports only an object that does not decode.
func CertificateProgressing(u *unstructured.Unstructured) (bool, string, error) {
	cert, err := decode[certificateObject](u)
	if err != nil {
		return false, "", err
	}
	progressing, description := generationProgressing(u, cert.Status.ObservedGeneration, CertificateKind.Kind)
	return progressing, description, nil
}

// IssuerProgressing is CertificateProgressing for the Issuer.
func IssuerProgressing(u *unstructured.Unstructured) (bool, string, error) {
	issuer, err := decode[issuerObject](u)
	if err != nil {
		return false, "", err
	}
	progressing, description := generationProgressing(u, issuer.Status.ObservedGeneration, IssuerKind.Kind)
	return progressing, description, nil
}
