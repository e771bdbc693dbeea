// Package memlimit gives the Go runtime a soft memory limit that follows the
// container's, so that the collector works harder as the heap nears the
// limit instead of letting the process be killed, and the process's RSS
// stays close to its live heap when memory is tight.
//
// Apply reads the memory limit of the process's cgroup (v2 memory.max, or
// v1 memory.limit_in_bytes) and sets debug.SetMemoryLimit to Ratio of it,
// unless GOMEMLIMIT is set, in which case the runtime has already applied
// it and Apply leaves it alone. Its Decision says what it chose and why.
package memlimit
