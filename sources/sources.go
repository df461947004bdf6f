// Package sources declares, once, which events feed which function: the kinds an
// ApiServerSource watches for it and the schedules of its PingSources. The function runtime
// checks a function against its feed, the local landscape configures its in-process Knative
// adapters from it, and the manifests in config/ are generated from it (see hack/genconfig).
package sources

import (
	"fmt"
	"strings"
)

// Mode is the ApiServerSource event mode.
type Mode string

const (
	// ReferenceMode events carry an ObjectReference only; the function reads the object itself.
	ReferenceMode Mode = "Reference"
	// ResourceMode events carry the whole object.
	ResourceMode Mode = "Resource"
)

// Resource is one kind an ApiServerSource watches.
type Resource struct {
	APIVersion string
	Kind       string
	// Plural is the resource name in the API (the adapter watches by group/version/resource).
	Plural string
	// LabelSelector restricts the watch to matching objects; empty watches all.
	LabelSelector string
}

// Group returns the API group of the resource ("" for the core group).
func (r Resource) Group() string {
	if i := strings.Index(r.APIVersion, "/"); i >= 0 {
		return r.APIVersion[:i]
	}
	return ""
}

// Ping is one PingSource schedule; each tick asks the function to run the named sweep.
type Ping struct {
	// Sweep names the sweep the function runs on each tick.
	Sweep string
	// Schedule is a cron expression; an optional leading seconds field is allowed.
	Schedule string
	// Timezone is an IANA time zone name for the schedule; empty means UTC.
	Timezone string
}

// Data is the JSON payload a PingSource sends for this ping.
func (p Ping) Data() string {
	return fmt.Sprintf(`{"sweep":%q}`, p.Sweep)
}

// Feed is everything that feeds one function.
type Feed struct {
	// Function is the function's name: its folder under functions/, its Knative Service and
	// the prefix of its sources' names.
	Function string
	// Mode is the event mode of the function's ApiServerSource.
	Mode Mode
	// Resources are the kinds the function's ApiServerSource watches in all namespaces.
	Resources []Resource
	// Pings are the function's PingSources.
	Pings []Ping
}

// Ping returns the ping that runs the named sweep.
func (f Feed) Ping(sweep string) (Ping, bool) {
	for _, p := range f.Pings {
		if p.Sweep == sweep {
			return p, true
		}
	}
	return Ping{}, false
}

// All lists the feed of every function; a new function adds its feed here.
var All = []Feed{Bastion}
