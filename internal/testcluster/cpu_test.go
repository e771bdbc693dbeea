package testcluster

import (
	"os"
	"testing"
	"time"
)

// TestProcessCPU: the calling process's CPU time grows by about the time it
// spins, whether asked as pid 0 or by its pid, and an absent process is an
// error.
func TestProcessCPU(t *testing.T) {
	before, err := ProcessCPU(0)
	if err != nil {
		t.Fatal(err)
	}
	for start := time.Now(); time.Since(start) < 300*time.Millisecond; { // spin
	}
	after, err := ProcessCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// At least a third of the spin: a loaded machine may deschedule us.
	if spent := after - before; spent < 100*time.Millisecond {
		t.Errorf("ProcessCPU grew by %s over a 300ms spin", spent)
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
