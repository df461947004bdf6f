package webhook

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/tidwall/gjson"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// patchResponse is admission.PatchResponseFromRaw with the patch of createPatch.
func patchResponse(original, current []byte) admission.Response {
	patches, err := createPatch(original, current)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	resp := admission.Response{Patches: patches, AdmissionResponse: admissionv1.AdmissionResponse{Allowed: true}}
	if len(patches) > 0 {
		pt := admissionv1.PatchTypeJSONPatch
		resp.PatchType = &pt
	}
	return resp
}

// createPatch returns the operations jsonpatch.CreatePatch(a, b) returns, at a fraction of its
// cost when a mutation changes little of a large object (a label on a pod): CreatePatch decodes
// both documents whole into generic trees, most of a request's time. createPatch splits
// objects into their members as raw text instead (gjson, which scans without decoding), skips
// the members whose text is equal (unchanged: both sides come from the same encoder) and hands
// only the members that differ to CreatePatch, with their path in front. Members added or
// removed give the operations CreatePatch gives them. Like CreatePatch's, the operations come
// in no particular order.
func createPatch(a, b []byte) ([]jsonpatch.Operation, error) {
	if bytes.Equal(a, b) {
		return []jsonpatch.Operation{}, nil
	}
	if !gjson.ValidBytes(a) || !gjson.ValidBytes(b) {
		return jsonpatch.CreatePatch(a, b) // which says what is wrong
	}
	return appendPatch(nil, "", gjson.ParseBytes(a), gjson.ParseBytes(b), 0)
}

// maxSplitDepth bounds the splitting: below it, a member that differs is diffed whole, so that a
// change deep in an object costs a bounded number of scans of it.
const maxSplitDepth = 4

func appendPatch(patch []jsonpatch.Operation, path string, a, b gjson.Result, depth int) ([]jsonpatch.Operation, error) {
	if a.Raw == b.Raw {
		return patch, nil
	}
	if depth >= maxSplitDepth || !a.IsObject() || !b.IsObject() {
		ops, err := jsonpatch.CreatePatch([]byte(a.Raw), []byte(b.Raw))
		if err != nil {
			return nil, err
		}
		for _, op := range ops {
			op.Path = path + op.Path
			patch = append(patch, op)
		}
		return patch, nil
	}
	am, bm := members(a), members(b)
	for key, bv := range bm {
		p := path + "/" + escapePointer(key)
		av, found := am[key]
		if !found {
			value, err := decodeValue([]byte(bv.Raw))
			if err != nil {
				return nil, err
			}
			patch = append(patch, jsonpatch.NewOperation("add", p, value))
			continue
		}
		var err error
		if patch, err = appendPatch(patch, p, av, bv, depth+1); err != nil {
			return nil, err
		}
	}
	for key := range am {
		if _, found := bm[key]; !found {
			patch = append(patch, jsonpatch.NewOperation("remove", path+"/"+escapePointer(key), nil))
		}
	}
	return patch, nil
}

// members are an object's members by name; of a name given twice, the last, as encoding/json
// decodes it.
func members(obj gjson.Result) map[string]gjson.Result {
	m := map[string]gjson.Result{}
	obj.ForEach(func(key, value gjson.Result) bool {
		m[key.Str] = value
		return true
	})
	return m
}

// decodeValue decodes a JSON value as CreatePatch does (numbers as json.Number).
func decodeValue(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	return v, dec.Decode(&v)
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// escapePointer escapes a member name for a JSON pointer (RFC 6901).
func escapePointer(key string) string { return pointerEscaper.Replace(key) }
