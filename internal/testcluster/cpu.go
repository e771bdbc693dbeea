package testcluster

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on every
// Linux architecture that Go supports.
const clockTicks = 100

// CPU returns the CPU time (user and system) that the cluster's API server
// process has used since it started, from /proc: benchmarks read it before
// and after a run to learn what the run cost the member. It fails while the
// cluster is stopped.
func (c *Cluster) CPU() (time.Duration, error) {
	c.mu.Lock()
	p := c.proc
	c.mu.Unlock()
	if p == nil {
		return 0, fmt.Errorf("cpu of cluster %q: stopped", c.name)
	}
	return ProcessCPU(p.pid)
}

// EtcdCPU returns the CPU time that the etcd process, shared by every
// cluster, has used since it started.
func (e *Env) EtcdCPU() (time.Duration, error) {
	return ProcessCPU(e.etcd.pid)
}

// ProcessCPU returns the CPU time, user and system, that process pid has
// used, from fields 14 and 15 (utime, stime) of /proc/<pid>/stat; pid 0 is
// the calling process. Linux only.
func ProcessCPU(pid int) (time.Duration, error) {
	path := "/proc/self/stat"
	if pid != 0 {
		path = "/proc/" + strconv.Itoa(pid) + "/stat"
	}
	stat, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("cpu of process %d: %w", pid, err)
	}
	// The command (field 2) is in parentheses and may hold spaces: count
	// fields from the last ')', which field 3 (the state) follows.
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, fmt.Errorf("cpu of process %d: malformed %s", pid, path)
	}
	fields := bytes.Fields(stat[end+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("cpu of process %d: malformed %s", pid, path)
	}
	var ticks int64
	for _, f := range fields[11:13] { // utime, stime: fields 14 and 15 of the line
		n, err := strconv.ParseInt(string(f), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("cpu of process %d: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}
