package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
)

// keepUnknownFields returns after (the mutated typed object, encoded) with the members of raw
// (the request's object) put back that the typed object's type does not know: a three-way merge
// of raw, before (original, the object as decoded before the mutation, encoded again: what the
// typed decode saw) and after.
// A member of raw that before lacks was not seen by the typed decode, so the mutation cannot
// have meant to remove it; it stays where it was, unless the mutation removed or replaced the
// object that holds it.
//
// Lists are matched element by element, not by index alone: a mutation may delete an element
// and append others (high-availability-config replaces a template's spread constraints on
// the hostname and zone keys), and an element's unknown fields must follow the element, never
// land on whatever now sits at its index. See matchElements.
func keepUnknownFields(raw []byte, original any, after []byte) ([]byte, error) {
	before, err := json.Marshal(original)
	if err != nil {
		return nil, err
	}
	// Where the decoder could not tell whether the request held members the type lacks (the
	// Defaulter's): the kube-apiserver encodes the object from a type, so when ours encodes
	// the decoded object to the very same bytes, there is nothing to put back.
	if bytes.Equal(bytes.TrimSpace(raw), before) {
		return after, nil
	}
	var rawTree, beforeTree, afterTree any
	for _, d := range []struct {
		data []byte
		into *any
	}{{raw, &rawTree}, {before, &beforeTree}, {after, &afterTree}} {
		dec := json.NewDecoder(bytes.NewReader(d.data))
		// Numbers stay literals: an int64 must not round-trip through float64.
		dec.UseNumber()
		if err := dec.Decode(d.into); err != nil {
			return nil, fmt.Errorf("keeping unknown fields: %w", err)
		}
	}
	return json.Marshal(mergeUnknown(rawTree, beforeTree, afterTree))
}

// mergeUnknown returns after with the members of raw that before lacks, recursively; raw and
// before have the same shape except for those members (before was decoded from raw). after is
// modified in place.
func mergeUnknown(raw, before, after any) any {
	switch a := after.(type) {
	case map[string]any:
		r, rawIsObject := raw.(map[string]any)
		b, beforeIsObject := before.(map[string]any)
		if !rawIsObject || !beforeIsObject {
			return after // the mutation replaced the value with an object
		}
		for k, av := range a {
			rv, inRaw := r[k]
			bv, inBefore := b[k]
			if inRaw && inBefore {
				a[k] = mergeUnknown(rv, bv, av)
			}
		}
		for k, rv := range r {
			if _, seen := b[k]; seen {
				continue // known: the mutation decides about it
			}
			if _, set := a[k]; !set {
				a[k] = rv
			}
		}
		return a
	case []any:
		r, rawIsList := raw.([]any)
		b, beforeIsList := before.([]any)
		if !rawIsList || !beforeIsList || len(r) != len(b) {
			return after
		}
		for j, i := range matchElements(b, a) {
			if i >= 0 {
				a[j] = mergeUnknown(r[i], b[i], a[j])
			}
		}
		return a
	default:
		return after
	}
}

// matchElements tells for each element of after which element of before it is (-1: a new
// element), each element of before matched at most once:
//  1. an unchanged element at the same index (the common case: elements appended);
//  2. an unchanged element elsewhere (elements deleted or inserted before it);
//  3. among the rest, objects by the most members with equal values (an element the mutation
//     changed, e.g. a constraint that got a matchLabelKey): a majority of its members, or
//     any at its own index; the same index wins ties;
//  4. an object still unmatched, at the index of an object still unmatched (changed in place).
//
// Only objects can hold unknown fields, so scalars need no match beyond 1 and 2.
func matchElements(before, after []any) []int {
	origin := make([]int, len(after))
	used := make([]bool, len(before))
	for j := range after {
		origin[j] = -1
		if j < len(before) && reflect.DeepEqual(before[j], after[j]) {
			origin[j], used[j] = j, true
		}
	}
	for j := range after {
		if origin[j] >= 0 {
			continue
		}
		for i := range before {
			if !used[i] && reflect.DeepEqual(before[i], after[j]) {
				origin[j], used[i] = i, true
				break
			}
		}
	}
	type candidate struct{ i, j, score int }
	var candidates []candidate
	for j, aj := range after {
		a, ok := aj.(map[string]any)
		if origin[j] >= 0 || !ok {
			continue
		}
		for i, bi := range before {
			b, ok := bi.(map[string]any)
			if used[i] || !ok {
				continue
			}
			score := 0
			for k, av := range a {
				if bv, ok := b[k]; ok && reflect.DeepEqual(av, bv) {
					score++
				}
			}
			// A majority of equal members makes it the same element changed; at its own
			// index, any equal member does (an element changed in place, like a container
			// that got an env var). Otherwise the mutation deleted the old element and made a
			// new one, and the old one's unknown fields go with it.
			if score*2 > len(a) || (i == j && score > 0) {
				candidates = append(candidates, candidate{i: i, j: j, score: score})
			}
		}
	}
	slices.SortStableFunc(candidates, func(x, y candidate) int {
		if x.score != y.score {
			return y.score - x.score
		}
		sameX, sameY := x.i == x.j, y.i == y.j
		switch {
		case sameX && !sameY:
			return -1
		case sameY && !sameX:
			return 1
		}
		return 0
	})
	for _, c := range candidates {
		if origin[c.j] < 0 && !used[c.i] {
			origin[c.j], used[c.i] = c.i, true
		}
	}
	// An object left at the index of an object nobody else is: changed in place, even in
	// every member it has (a node selector term whose only member, its requirements, the
	// mutation rewrote).
	for j, aj := range after {
		if _, ok := aj.(map[string]any); ok && origin[j] < 0 && j < len(before) && !used[j] {
			if _, ok := before[j].(map[string]any); ok {
				origin[j], used[j] = j, true
			}
		}
	}
	return origin
}
