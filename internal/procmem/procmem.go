// Package procmem reads the process's memory as the kernel accounts for it
// (/proc/self/status on Linux): the resident set size and its peak. The
// benchmarks report them beside the Go runtime's heap figures, which leave
// out what the collector has freed but not yet returned, and the headroom
// it lets the heap grow into.
package procmem

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
)

// Usage is the process's memory, in bytes.
type Usage struct {
	// RSS is the resident set size now (VmRSS).
	RSS uint64
	// PeakRSS is the largest RSS so far (VmHWM).
	PeakRSS uint64
}

// Read returns the process's memory from /proc/self/status.
func Read() (Usage, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return Usage{}, fmt.Errorf("read process status: %w", err)
	}
	return parse(data)
}

func parse(status []byte) (Usage, error) {
	var u Usage
	fields := map[string]*uint64{"VmRSS": &u.RSS, "VmHWM": &u.PeakRSS}
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		dst := fields[name]
		if !ok || dst == nil {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return Usage{}, fmt.Errorf("parse %s in process status: %w", name, err)
		}
		*dst = kb << 10
		delete(fields, name)
	}
	if len(fields) > 0 {
		return Usage{}, fmt.Errorf("process status lacks %d of VmRSS and VmHWM", len(fields))
	}
	return u, nil
}

// WriteHeapProfile writes the Go heap profile (as of the last collection)
// to path, for the benchmarks that say where their heap goes.
func WriteHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("heap profile: %w", err)
	}
	return f.Close()
}
