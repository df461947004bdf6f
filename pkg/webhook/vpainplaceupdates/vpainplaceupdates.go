// Package vpainplaceupdates switches VerticalPodAutoscalers that would evict Pods to resize
// them in place where it can (GRM's vpa-in-place-updates webhook): update mode Auto (also when
// unset, its default) and Recreate become InPlaceOrRecreate, and the VPA is labelled
// vpa-in-place-updates.resources.gardener.cloud/mutated=true. Modes Off, Initial and
// InPlaceOrRecreate stay.
package vpainplaceupdates

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/webhook"
)

const (
	// Name is the webhook's name (Gardener's handler name).
	Name = "vpa-in-place-updates"
	// Path is where Gardener serves it.
	Path = "/webhooks/vpa-in-place-updates"

	// The update modes of autoscaling.k8s.io/v1 VerticalPodAutoscalers this webhook knows.
	updateModeAuto              = "Auto"
	updateModeRecreate          = "Recreate"
	updateModeInPlaceOrRecreate = "InPlaceOrRecreate"
)

// Webhook is the constructor the server registers.
var Webhook = webhook.Constructor{
	Name: Name,
	// gardenlet turns it off for workerless shoots.
	AppliesTo: (*tenant.Settings).HasWorkers,
	Enabled:   func(c *componentconfig.ResourceManagerFile) bool { return c.Webhooks.VPAInPlaceUpdates.Enabled },
	New: func(deps webhook.Deps) (webhook.Webhook, error) {
		return webhook.Admission(Name, Path, Handler(deps.Log.With("webhook", Name)), deps.Log), nil
	},
}

// Handler sets update mode InPlaceOrRecreate on VPAs whose mode is Auto or Recreate.
//
// The VPA is handled as unstructured JSON, not as the VPA project's Go type (which this
// module does not depend on): whatever fields the VPA has, the patch touches only the update
// mode and the label.
func Handler(log *slog.Logger) admission.Handler {
	return webhook.Defaulter(decoder{}, func() *unstructured.Unstructured { return &unstructured.Unstructured{} }, func(ctx context.Context, req admission.Request, vpa *unstructured.Unstructured) error {
		mode := updateModeAuto // the VPA API's default
		if v, found, _ := unstructured.NestedString(vpa.Object, "spec", "updatePolicy", "updateMode"); found {
			mode = v
		}
		if mode != updateModeAuto && mode != updateModeRecreate {
			return nil
		}
		object(vpa.Object, "spec", "updatePolicy")["updateMode"] = updateModeInPlaceOrRecreate
		object(vpa.Object, "metadata", "labels")[resourcesv1alpha1.VPAInPlaceUpdatesMutated] = "true"
		log.InfoContext(ctx, "set update mode InPlaceOrRecreate", "vpa", webhook.ObjectKeyForCreate(vpa, req), "updateMode", mode)
		return nil
	})
}

// decoder decodes the request's object as unstructured JSON and rejects what Gardener's typed
// decode (the VPA project's Go type, through controller-runtime's decoder) rejects on the paths
// this webhook reads or writes: another kind or version, and a wrongly typed value there, with
// the message encoding/json gives for it. The handler answers those 400, as Gardener does.
type decoder struct{}

const (
	apiVersion = "autoscaling.k8s.io/v1"
	kind       = "VerticalPodAutoscaler"
)

// typedPaths are the paths whose values must be objects, each with what encoding/json names
// its Go struct field and type in an UnmarshalTypeError, in the order of the VPA type's fields.
var typedPaths = []struct {
	path          []string
	field, goType string
}{
	{[]string{"metadata"}, "VerticalPodAutoscaler.metadata", "v1.ObjectMeta"},
	{[]string{"metadata", "labels"}, "ObjectMeta.metadata.labels", "map[string]string"},
	{[]string{"spec"}, "VerticalPodAutoscaler.spec", "v1.VerticalPodAutoscalerSpec"},
	{[]string{"spec", "updatePolicy"}, "VerticalPodAutoscalerSpec.spec.updatePolicy", "v1.PodUpdatePolicy"},
}

func (decoder) Decode(req admission.Request, into runtime.Object) error {
	return decoder{}.DecodeRaw(req.Object, into)
}

func (decoder) DecodeRaw(raw runtime.RawExtension, into runtime.Object) error {
	u, ok := into.(*unstructured.Unstructured)
	if !ok {
		return fmt.Errorf("decoding into %T: only unstructured objects", into)
	}
	if len(raw.Raw) == 0 {
		return errors.New("there is no content to decode") // controller-runtime's words
	}
	// What is not JSON fails where the typed decode first looks for apiVersion and kind
	// (apimachinery's SimpleMetaFactory), with its message.
	findKind := struct {
		APIVersion string `json:"apiVersion,omitempty"`
		Kind       string `json:"kind,omitempty"`
	}{}
	if err := json.Unmarshal(raw.Raw, &findKind); err != nil {
		return fmt.Errorf("couldn't get version/kind; json parse error: %v", err)
	}
	var object map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw.Raw))
	// Numbers stay as written: a float64 round trip would rewrite large integers, and the
	// patch would change them.
	dec.UseNumber()
	if err := dec.Decode(&object); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("cannot decode VerticalPodAutoscaler: data after the object")
	}
	// null decodes into an empty VPA, as into Gardener's typed one.
	if object == nil {
		object = map[string]any{}
	}
	// A missing apiVersion or kind is the VPA's, as the typed decode defaults them.
	if v, ok := object["apiVersion"].(string); ok && v != "" && v != apiVersion {
		return fmt.Errorf("cannot decode apiVersion %q into an %s %s", v, apiVersion, kind)
	}
	if v, ok := object["kind"].(string); ok && v != "" && v != kind {
		return fmt.Errorf("cannot decode kind %q into an %s %s", v, apiVersion, kind)
	}
	for _, p := range typedPaths {
		v, found, _ := unstructured.NestedFieldNoCopy(object, p.path...)
		if _, isObject := v.(map[string]any); found && v != nil && !isObject {
			return typeError(v, p.field, p.goType)
		}
	}
	labels, _, _ := unstructured.NestedFieldNoCopy(object, "metadata", "labels")
	if labels, ok := labels.(map[string]any); ok {
		for _, v := range labels {
			if _, ok := v.(string); !ok && v != nil {
				return typeError(v, "ObjectMeta.metadata.labels", "string")
			}
		}
	}
	if v, found, _ := unstructured.NestedFieldNoCopy(object, "spec", "updatePolicy", "updateMode"); found && v != nil {
		if _, ok := v.(string); !ok {
			return typeError(v, "PodUpdatePolicy.spec.updatePolicy.updateMode", "v1.UpdateMode")
		}
	}
	u.Object = object
	return nil
}

// typeError is encoding/json's UnmarshalTypeError message for value v in a Go struct field,
// as Gardener's typed decode answers it.
func typeError(v any, field, goType string) error {
	return fmt.Errorf("json: cannot unmarshal %s into Go struct field %s of type %s", jsonType(v), field, goType)
}

// jsonType names a decoded JSON value's type as encoding/json's errors do.
func jsonType(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case bool:
		return "bool"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	default:
		return "number"
	}
}

// object returns the object at path in obj, made where it is missing or null (the decoder let
// through only objects on the paths this webhook writes).
func object(obj map[string]any, path ...string) map[string]any {
	for _, key := range path {
		next, ok := obj[key].(map[string]any)
		if !ok {
			next = map[string]any{}
			obj[key] = next
		}
		obj = next
	}
	return obj
}
