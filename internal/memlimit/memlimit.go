package memlimit

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"runtime/debug"
	"strconv"
	"strings"
)

// Ratio is the share of the container's memory limit that Apply gives the
// Go runtime. The rest is headroom for what the runtime's limit does not
// bound: memory outside Go's heap and stacks (the kernel's socket buffers
// are charged to the cgroup too) and the time the collector takes to react.
const Ratio = 0.9

// unlimitedV1 is where cgroup v1 reports "no limit": the largest int64
// rounded down to a page, 9223372036854771712. Anything this large means
// no limit.
const unlimitedV1 = math.MaxInt64 / 2

// Decision is what Apply chose.
type Decision struct {
	// Limit is the runtime's soft memory limit in bytes after Apply;
	// math.MaxInt64 means none.
	Limit int64
	// Source says where Limit came from: "GOMEMLIMIT", the cgroup file
	// read, or "" when no limit was found.
	Source string
	// ContainerLimit is the cgroup's memory limit in bytes, when Limit was
	// derived from it.
	ContainerLimit int64
}

// Apply sets the runtime's soft memory limit to Ratio of the memory limit
// of the process's cgroup, unless the GOMEMLIMIT environment variable is
// set (then the runtime has applied it, and Apply leaves it) or the cgroup
// has no limit. An error reading the cgroup leaves the limit unchanged.
func Apply() (Decision, error) {
	return apply(os.Getenv("GOMEMLIMIT"), os.DirFS("/"), Ratio, debug.SetMemoryLimit)
}

// apply is Apply over the file system fsys (rooted at "/"), with the
// runtime's setter passed in for tests.
func apply(env string, fsys fs.FS, ratio float64, setLimit func(int64) int64) (Decision, error) {
	if env != "" {
		return Decision{Limit: setLimit(-1), Source: "GOMEMLIMIT"}, nil
	}
	limit, file, err := cgroupLimit(fsys)
	if err != nil || limit == 0 {
		return Decision{Limit: setLimit(-1)}, err
	}
	soft := int64(float64(limit) * ratio)
	setLimit(soft)
	return Decision{Limit: soft, Source: "/" + file, ContainerLimit: limit}, nil
}

// cgroupLimit returns the memory limit of the process's cgroup and the file
// it read, or 0 when there is none. It reads /proc/self/cgroup for the
// process's cgroup paths and looks, for cgroup v2 and then v1, first in the
// process's own cgroup directory, then at the root of the mount: inside a
// container with its own cgroup namespace the root is the container's
// cgroup, and without one the host's path is not mounted in the container.
func cgroupLimit(fsys fs.FS) (int64, string, error) {
	self, err := fs.ReadFile(fsys, "proc/self/cgroup")
	if errors.Is(err, fs.ErrNotExist) {
		return 0, "", nil // not Linux, or no /proc: no limit to follow
	}
	if err != nil {
		return 0, "", fmt.Errorf("read cgroup of the process: %w", err)
	}
	var v2, v1 string
	sc := bufio.NewScanner(strings.NewReader(string(self)))
	for sc.Scan() {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2 = parts[2]
		case containsController(parts[1], "memory"):
			v1 = parts[2]
		}
	}
	var candidates []string
	if v2 != "" {
		candidates = append(candidates, path.Join("sys/fs/cgroup", v2, "memory.max"), "sys/fs/cgroup/memory.max")
	}
	if v1 != "" {
		candidates = append(candidates, path.Join("sys/fs/cgroup/memory", v1, "memory.limit_in_bytes"), "sys/fs/cgroup/memory/memory.limit_in_bytes")
	}
	for _, file := range candidates {
		data, err := fs.ReadFile(fsys, file)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, "", fmt.Errorf("read memory limit: %w", err)
		}
		value := strings.TrimSpace(string(data))
		if value == "max" {
			return 0, file, nil
		}
		limit, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return 0, "", fmt.Errorf("parse memory limit in /%s: %w", file, err)
		}
		if limit <= 0 || limit >= unlimitedV1 {
			return 0, file, nil
		}
		return limit, file, nil
	}
	return 0, "", nil
}

func containsController(list, name string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}
