package helperproc

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// echoEnv makes the test binary an echo helper: it writes its task's
// greeting, then each line it reads in upper case.
const echoEnv = "FLEETCACHE_HELPERPROC_ECHO"

type echoTask struct{ Greeting string }

func TestMain(m *testing.M) {
	Serve(echoEnv, func(t echoTask) error {
		fmt.Println(t.Greeting)
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
			fmt.Println(strings.ToUpper(in.Text()))
		}
		return in.Err()
	})
	goleak.VerifyTestMain(m)
}

// TestEcho: the helper gets its task, answers line by line, ends when its
// input does, and its CPU time is known.
func TestEcho(t *testing.T) {
	p := Start(t.Context(), t, echoEnv, echoTask{Greeting: "hi"})
	if got := p.Line(t, "the greeting"); got != "hi" {
		t.Errorf("greeting %q, want hi", got)
	}
	for _, s := range []string{"one", "two words"} {
		p.Printf(t, "%s", s)
		if got := p.Line(t, "the echo"); got != strings.ToUpper(s) {
			t.Errorf("echo of %q: %q", s, got)
		}
	}
	if cpu := p.Wait(t); cpu <= 0 {
		t.Errorf("CPU time %s, want > 0", cpu)
	}
}

// TestNoTask: without its variable, a process is no helper.
func TestNoTask(t *testing.T) {
	t.Setenv(echoEnv, "")
	if ok, err := task(echoEnv, &echoTask{}); ok || err != nil {
		t.Errorf("task = %v, %v; want false, nil", ok, err)
	}
	t.Setenv(echoEnv, "{")
	if ok, err := task(echoEnv, &echoTask{}); !ok || err == nil {
		t.Errorf("task of malformed JSON = %v, %v; want true and an error", ok, err)
	}
}
