package referenceprotection_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gardener-knative/gardener-knative/pkg/controller/referenceprotection"
)

// The resync sweep answers "is it referenced?" from its snapshot: it costs one LIST per kind
// (per page of 500) and no GET, whether there are 3 or 30 protected objects with as many
// referrers. The counts are of requests, not time.
func TestSweepCostDoesNotGrowWithObjects(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := serve(t, tc.fn)
			ns := namespace(t)
			sweep, ok := tc.fn.Sweep(referenceprotection.ResyncSweep)
			require.True(t, ok)
			kinds := 1 + len(sweep.Related)

			var lists []int
			created := 0
			for _, n := range []int{3, 30} {
				for ; created < n; created++ {
					p := tc.protected(ns)
					create(t, p)
					create(t, tc.referrer(ns, p))
				}
				h.ResetRequests()
				h.Sweep(referenceprotection.ResyncSweep)
				assert.Zero(t, h.Requests("get"), "n=%d: no GET per object", n)
				lists = append(lists, h.Requests("list"))
			}
			assert.Equal(t, []int{kinds, kinds}, lists, "one LIST per kind, for 3 objects as for 30")
		})
	}
}

// What an event costs that changes nothing, in API requests.
func TestNoOpEventCost(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := serve(t, tc.fn)
			ns := namespace(t)
			tc.protect(t, h, ns) // warms the client's REST mappings up
			h.ResetRequests()
			p := tc.protect(t, h, ns)
			// The CloudProfile's event also reaches its versions reconciler: one GET (no versions,
			// no write). The NamespacedCloudProfile's reaches its status reconciler, which reads it
			// and its parent (missing here).
			statusReads := map[string]int{"cloudprofile": 1, "namespacedcloudprofile": 2}[tc.fn.Name]
			assert.Equal(t, 1+statusReads, h.Requests("get"), "a new protected object")
			assert.Equal(t, 1, h.Requests("patch"), "a new protected object: the finalizer")
			r := tc.referrer(ns, p)
			create(t, r)
			h.Send("add", r) // a new referrer: nothing to release
			p = reread(t, p)

			h.ResetRequests()
			h.Send("update", p)
			protectedEvent := h.Requests("")

			h.ResetRequests()
			require.NoError(t, env.Client.Delete(t.Context(), r))
			h.Send("delete", r)
			referrerDeleted := h.Requests("")
			assert.Zero(t, h.Requests("patch"))

			assert.Equal(t, statusReads, protectedEvent, "the protected object's own event: filtered by the protection")
			assert.Equal(t, 1, referrerDeleted, "a referrer deleted while the protected object stays: one metadata GET")
		})
	}
}

// What deciding a blocked deletion costs on an event: the protected object's metadata, one LIST
// per referrer kind (live, as no field selector serves these references), and the Event where
// Gardener records one; no write of the object. The blocked deletion was already decided once
// while setting up, so its Event is a repeat: counted on the first (a create that finds it, a
// GET and a PATCH of the Event). Its release costs the same with a PATCH instead of the Event.
func TestBlockedDeletionEventCost(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := serve(t, tc.fn)
			p, r := tc.referencedWhileDeleted(t, h, namespace(t))
			sweep, _ := tc.fn.Sweep(referenceprotection.ResyncSweep)

			h.ResetRequests()
			h.Send("update", p)
			gets, patches, creates := 1, 0, 0
			if tc.event {
				gets, patches, creates = 2, 1, 1
			}
			assert.Equal(t, gets, h.Requests("get"))
			assert.Equal(t, len(sweep.Related), h.Requests("list"))
			assert.Equal(t, patches, h.Requests("patch"), "no write of the protected object")
			assert.Equal(t, creates, h.Requests("create"))

			require.NoError(t, env.Client.Delete(t.Context(), r))
			h.ResetRequests()
			h.Send("delete", r)
			require.False(t, exists(t, p))
			assert.Equal(t, 1, h.Requests("get"), "the release: the deleted referrer names its object, no read to map it")
			assert.Equal(t, len(sweep.Related), h.Requests("list"))
			assert.Equal(t, 1, h.Requests("patch"))
			assert.Zero(t, h.Requests("create"))
		})
	}
}
