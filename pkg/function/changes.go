package function

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Changes are what of an updated object a watch acts on, so that the updates that change none of
// it are dropped where they start instead of waking the function: the cluster source tells of
// each update which of these parts it changed (ChangeAttribute), and the function's Trigger lets
// through only the updates that changed one of its watch's parts. A Shoot's status is written
// every minute by its gardenlet; a function that decides on the Shoot's spec and labels alone
// need not see those writes. Adds and deletes always pass, as does every update of a kind when
// any watch of it in the function names no Changes.
//
// A watch that acts on adds and deletes only names NoUpdates. Otherwise a part is ChangedSpec
// (everything but metadata and status), ChangedMetadata (labels,
// annotations, finalizers, owner references and the deletion timestamp: what a predicate on
// metadata reads; resourceVersion and managed fields change with every write and are never a
// reason), ChangedStatus (all of status) or StatusField(name) (one top-level field of status).
// A watch names every part its predicate and mapper read, and every part whose change its
// reconciler must see (e.g. status.observedGeneration where it waits for gardenlet to observe a
// spec).
type Changes []string

// The parts of an object besides its status fields (StatusField).
const (
	ChangedSpec     = "spec"
	ChangedMetadata = "metadata"
	ChangedStatus   = "status"
)

// NoUpdates are the Changes of a watch that acts on no update, only on adds and deletes.
var NoUpdates = Changes{noUpdates}

const noUpdates = "none"

// Parts are the parts whose change lets an update through: none for NoUpdates.
func (c Changes) Parts() []string {
	return slices.DeleteFunc(slices.Clone(c), func(part string) bool { return part == noUpdates })
}

// StatusField is the part of one top-level field of an object's status, e.g.
// StatusField("observedGeneration").
func StatusField(name string) string { return ChangedStatus + "." + name }

// changeAttributePrefix begins every change attribute's name.
const changeAttributePrefix = "ch"

// maxAttributeName is the longest name the CloudEvents specification lets an attribute have.
const maxAttributeName = 20

// ChangeAttribute is the CloudEvents extension the cluster source sets on an event for part:
// "true" where the update changed it (and on every add and delete), "false" where it did not.
// Its name is the part's letters, lowercased: chspec, chmetadata, chstatus, chobservedgeneration.
func ChangeAttribute(part string) string {
	name := strings.TrimPrefix(part, ChangedStatus+".")
	var b strings.Builder
	b.WriteString(changeAttributePrefix)
	for _, r := range strings.ToLower(name) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Validate says whether every part is one, with an attribute CloudEvents accepts that no other
// part has: a status field's name is letters and digits, none of the three other parts' names.
func (c Changes) Validate() error {
	for _, part := range c {
		field, isField := strings.CutPrefix(part, ChangedStatus+".")
		switch {
		case part == noUpdates:
			if len(c) > 1 {
				return fmt.Errorf("changes %v: NoUpdates names no part beside it", c)
			}
			continue
		case part == ChangedSpec, part == ChangedMetadata, part == ChangedStatus:
		case isField && field != "" && strings.Trim(field, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") == "":
			if lower := strings.ToLower(field); lower == ChangedSpec || lower == ChangedMetadata || lower == ChangedStatus {
				return fmt.Errorf("change %q would share its attribute with %q", part, lower)
			}
		default:
			return fmt.Errorf("change %q is none of %s, %s, %s or %s (a field of letters and digits)", part, ChangedSpec, ChangedMetadata, ChangedStatus, StatusField("<field>"))
		}
		if attribute := ChangeAttribute(part); len(attribute) > maxAttributeName {
			return fmt.Errorf("change %q: its attribute %s is longer than %d characters", part, attribute, maxAttributeName)
		}
	}
	return nil
}

// Fingerprint is a hash of each of parts of obj, in their order: two fingerprints of an object
// differ at a part exactly where that part changed (but for hash collisions, which make an update
// look unchanged in a part one time in 2^64).
func Fingerprint(obj *unstructured.Unstructured, parts []string) []uint64 {
	prints := make([]uint64, len(parts))
	for i, part := range parts {
		prints[i] = hashJSON(partOf(obj.Object, part))
	}
	return prints
}

// partOf is the value of part in an object's content.
func partOf(content map[string]any, part string) any {
	switch part {
	case ChangedSpec:
		rest := make(map[string]any, len(content))
		for k, v := range content {
			if k != "metadata" && k != "status" && k != "apiVersion" && k != "kind" {
				rest[k] = v
			}
		}
		return rest
	case ChangedMetadata:
		meta, _ := content["metadata"].(map[string]any)
		return []any{meta["labels"], meta["annotations"], meta["finalizers"], meta["ownerReferences"], meta["deletionTimestamp"]}
	case ChangedStatus:
		return content["status"]
	}
	status, _ := content["status"].(map[string]any)
	return status[strings.TrimPrefix(part, ChangedStatus+".")]
}

// hashJSON hashes v's JSON, whose maps encoding/json writes in the order of their keys.
func hashJSON(v any) uint64 {
	h := fnv.New64a()
	// An object decoded from JSON encodes again.
	_ = json.NewEncoder(h).Encode(v)
	return h.Sum64()
}
