package app

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/fleetcache/fleetcache/internal/procmem"
	"github.com/fleetcache/fleetcache/pkg/graphql"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/informers"
)

// processStatus returns what Query.fleetcache says of this process: read
// when asked (a status page asks every 10 s), from the index's budget, the
// fleet's list slots, the kernel's RSS and the Go runtime's limit.
func processStatus(ix *index.Index, fleet *informers.Fleet) func() graphql.ProcessStatus {
	start := time.Now()
	replica, _ := os.Hostname()
	version := buildVersion()
	return func() graphql.ProcessStatus {
		b := ix.Budget()
		size, inUse, waiting := fleet.ListSlots()
		ps := graphql.ProcessStatus{Version: version, StartTime: start, Replica: replica,
			MemoryBudgetBytes: b.Budget, MemoryBudgetUsedBytes: b.Used,
			ListSlots: size, ListSlotsInUse: inUse, ListsWaiting: waiting, Goroutines: runtime.NumGoroutine()}
		if u, err := procmem.Read(); err == nil {
			ps.MemoryBytes = int64(min(u.RSS, math.MaxInt64))
		}
		if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
			ps.MemoryLimitBytes = l
		}
		return ps
	}
}

// buildVersion is the main module's version and VCS revision, as the Go
// toolchain recorded them: "(devel) 1a2b3c4d5e6f", "v0.3.0".
func buildVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := info.Main.Version
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " " + s.Value[:12]
		}
		if s.Key == "vcs.modified" && s.Value == "true" {
			v += "+dirty"
		}
	}
	return v
}
