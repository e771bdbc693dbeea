package testcluster

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// rusageCPU is the calling process's CPU time as getrusage tells it.
func rusageCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestProcessCPU: the calling process's CPU time, asked as pid 0 or by its
// pid, is what getrusage says before and after, to the ticks (10 ms) and
// however loaded the machine; an absent process is an error.
func TestProcessCPU(t *testing.T) {
	// Spin until there is something to measure: 200 ms of CPU.
	for start := rusageCPU(t); rusageCPU(t)-start < 200*time.Millisecond; { // spin
	}
	const tick = 10 * time.Millisecond
	for _, pid := range []int{0, os.Getpid()} {
		before := rusageCPU(t)
		got, err := ProcessCPU(pid)
		after := rusageCPU(t)
		if err != nil {
			t.Fatal(err)
		}
		// /proc counts whole ticks, user and system apart.
		if got < before-2*tick || got > after+tick {
			t.Errorf("ProcessCPU(%d) = %s, getrusage says %s to %s", pid, got, before, after)
		}
	}
	if _, err := ProcessCPU(1 << 30); err == nil {
		t.Error("ProcessCPU of an absent process: no error")
	}
}

// TestClusterCPU: an API server and etcd have used some CPU by the time
// they are ready.
func TestClusterCPU(t *testing.T) {
	env := testbed.Env(t)
	for name, cpu := range map[string]func() (time.Duration, error){"c1": env.Cluster("c1").CPU, "etcd": env.EtcdCPU} {
		d, err := cpu()
		if err != nil || d <= 0 {
			t.Errorf("CPU of %s: %s, %v; want > 0", name, d, err)
		}
	}
}
