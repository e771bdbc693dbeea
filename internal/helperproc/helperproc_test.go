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
	var task echoTask
	if ok, err := Task(echoEnv, &task); ok {
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(task.Greeting)
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
			fmt.Println(strings.ToUpper(in.Text()))
		}
		os.Exit(0)
	}
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
	if ok, err := Task(echoEnv, &echoTask{}); ok || err != nil {
		t.Errorf("Task = %v, %v; want false, nil", ok, err)
	}
	t.Setenv(echoEnv, "{")
	if ok, err := Task(echoEnv, &echoTask{}); !ok || err == nil {
		t.Errorf("Task of malformed JSON = %v, %v; want true and an error", ok, err)
	}
}
