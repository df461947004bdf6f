package collect

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// referenceKey builds a key the way the resource manager writes it.
func referenceKey(kind, name string) string {
	h := sha256.Sum256([]byte(name))
	return AnnotationKeyPrefix + kind + "-" + hex.EncodeToString(h[:])[:8]
}

func collectable(namespace, name string, age time.Duration) metav1.Object {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Namespace: namespace, Name: name, CreationTimestamp: metav1.NewTime(now.Add(-age)),
		Labels: map[string]string{LabelKeyGarbageCollectable: LabelValueGarbageCollectable},
	}}
}

func referrer(namespace string, annotations map[string]string) metav1.Object {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "referrer", Annotations: annotations}}
}

func TestReferencedKind(t *testing.T) {
	for key, want := range map[string]string{
		referenceKey(KindSecret, "s"):                       KindSecret,
		referenceKey(KindConfigMap, "c"):                    KindConfigMap,
		AnnotationKeyPrefix + "configmap-":                  KindConfigMap,
		AnnotationKeyPrefix + "other-1234":                  "other",
		AnnotationKeyPrefix + "configmap":                   "",
		AnnotationKeyPrefix + "config-map-1234":             "",
		AnnotationKeyPrefix + "-1234":                       "",
		"resources.gardener.cloud/configmap-1234":           "",
		"prefix." + AnnotationKeyPrefix + "configmap-12345": "",
	} {
		assert.Equal(t, want, ReferencedKind(key), key)
	}
}

func TestCollect(t *testing.T) {
	old := 2 * DefaultMinimumObjectLifetime
	for _, tc := range []struct {
		name        string
		lifetime    time.Duration
		configMaps  []metav1.Object
		secrets     []metav1.Object
		referencing []metav1.Object
		want        []Object
	}{
		{name: "nothing collectable"},
		{name: "unreferenced objects are collected, sorted",
			configMaps: []metav1.Object{collectable("b", "cm", old), collectable("a", "cm", old)},
			secrets:    []metav1.Object{collectable("a", "s", old)},
			want:       []Object{{KindConfigMap, "a", "cm"}, {KindConfigMap, "b", "cm"}, {KindSecret, "a", "s"}}},
		{name: "referenced objects are kept",
			configMaps:  []metav1.Object{collectable("ns", "used", old), collectable("ns", "unused", old)},
			secrets:     []metav1.Object{collectable("ns", "used", old), collectable("ns", "unused", old)},
			referencing: []metav1.Object{referrer("ns", map[string]string{referenceKey(KindConfigMap, "used"): "used", referenceKey(KindSecret, "used"): "used"})},
			want:        []Object{{KindConfigMap, "ns", "unused"}, {KindSecret, "ns", "unused"}}},
		{name: "a reference names its kind: a ConfigMap reference does not keep a Secret",
			secrets:     []metav1.Object{collectable("ns", "x", old)},
			referencing: []metav1.Object{referrer("ns", map[string]string{referenceKey(KindConfigMap, "x"): "x"})},
			want:        []Object{{KindSecret, "ns", "x"}}},
		{name: "a reference keeps only the object of the referrer's namespace",
			secrets:     []metav1.Object{collectable("ns", "x", old), collectable("other", "x", old)},
			referencing: []metav1.Object{referrer("ns", map[string]string{referenceKey(KindSecret, "x"): "x"})},
			want:        []Object{{KindSecret, "other", "x"}}},
		{name: "the value names the object, the hash is not verified",
			secrets:     []metav1.Object{collectable("ns", "x", old)},
			referencing: []metav1.Object{referrer("ns", map[string]string{AnnotationKeyPrefix + "secret-00000000": "x"})},
		},
		{name: "an empty value keeps nothing",
			secrets:     []metav1.Object{collectable("ns", "x", old)},
			referencing: []metav1.Object{referrer("ns", map[string]string{referenceKey(KindSecret, ""): ""})},
			want:        []Object{{KindSecret, "ns", "x"}}},
		{name: "other annotations keep nothing",
			secrets: []metav1.Object{collectable("ns", "x", old)},
			referencing: []metav1.Object{referrer("ns", map[string]string{
				"checksum/secret-x": "x", AnnotationKeyPrefix + "secret": "x", AnnotationKeyPrefix + "secret-1-2": "x",
			})},
			want: []Object{{KindSecret, "ns", "x"}}},
		{name: "young objects are not collected",
			configMaps: []metav1.Object{collectable("ns", "young", DefaultMinimumObjectLifetime-time.Second), collectable("ns", "exactly", DefaultMinimumObjectLifetime)},
			lifetime:   DefaultMinimumObjectLifetime,
			want:       []Object{{KindConfigMap, "ns", "exactly"}}},
		{name: "a zero lifetime collects even objects of this instant",
			configMaps: []metav1.Object{collectable("ns", "new", 0)},
			want:       []Object{{KindConfigMap, "ns", "new"}}},
		{name: "objects from the future are young",
			configMaps: []metav1.Object{collectable("ns", "future", -time.Second)}},
		{name: "unlabelled or otherwise labelled objects are never collected",
			configMaps: []metav1.Object{
				&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "plain"}},
				&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "false", Labels: map[string]string{LabelKeyGarbageCollectable: "false"}}},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Collect(now, tc.lifetime, tc.configMaps, tc.secrets, tc.referencing)
			if tc.want == nil {
				tc.want = []Object{}
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// Times are compared as instants, whatever their location.
func TestCollectComparesInstants(t *testing.T) {
	berlin := time.FixedZone("CEST", 2*60*60)
	cm := collectable("ns", "cm", DefaultMinimumObjectLifetime)
	assert.Equal(t, []Object{{KindConfigMap, "ns", "cm"}}, Collect(now.In(berlin), DefaultMinimumObjectLifetime, []metav1.Object{cm}, nil, nil))
}
