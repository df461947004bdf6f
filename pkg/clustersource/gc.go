package clustersource

import (
	"os"
	"runtime/debug"
)

// GCPercent is a cluster source's GOGC unless its environment sets one. What the source holds
// grows with the shoots it watches (each tenant's connection, watch streams and decoders), and at
// Go's 100 the collector lets the heap grow to twice that before it collects. The source only
// relays watch events, so its collections are few and cheap: at 50, bench-seed measured 9 % less
// memory at 25 and 50 shoots (0.92 instead of 1.14 MiB per shoot) for no CPU it could tell apart
// (docs/testing.md, "The source's collector").
const GCPercent = 50

// SetGCPercent makes GCPercent the process's GOGC unless its environment sets one; a cluster
// source's main calls it first.
func SetGCPercent() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(GCPercent)
	}
}
