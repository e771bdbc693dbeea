package helperproc

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Process is a helper process that Start started.
type Process struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  *bufio.Scanner
	stderr strings.Builder
}

// Start starts the test binary again, running no test, with the
// environment variable env set to task in JSON; ctx bounds the process.
func Start(ctx context.Context, tb testing.TB, env string, task any) *Process {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	spec, err := json.Marshal(task)
	if err != nil {
		tb.Fatal(err)
	}
	p := &Process{name: env, cmd: exec.CommandContext(ctx, exe, "-test.run=^$")}
	p.cmd.Env = append(os.Environ(), env+"="+string(spec))
	p.cmd.Stderr = &p.stderr
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		tb.Fatal(err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	p.lines = bufio.NewScanner(stdout)
	if err := p.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	return p
}

// Line returns the next line the helper writes, without its newline; it
// fails tb, saying it waited for what, when the helper ends first.
func (p *Process) Line(tb testing.TB, what string) string {
	tb.Helper()
	if !p.lines.Scan() {
		err := p.cmd.Wait()
		tb.Fatalf("helper %s ended before %s: %v, %v\n%s", p.name, what, p.lines.Err(), err, p.stderr.String())
	}
	return p.lines.Text()
}

// Printf writes a line to the helper's standard input.
func (p *Process) Printf(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if _, err := fmt.Fprintf(p.stdin, format+"\n", args...); err != nil {
		tb.Fatalf("helper %s: %v", p.name, err)
	}
}

// Wait closes the helper's standard input, waits for it to end, and
// returns the CPU time (user and system) it used. A helper that fails
// fails tb.
func (p *Process) Wait(tb testing.TB) time.Duration {
	tb.Helper()
	_ = p.stdin.Close()
	if err := p.cmd.Wait(); err != nil {
		tb.Fatalf("helper %s: %v\n%s", p.name, err, p.stderr.String())
	}
	return p.cmd.ProcessState.UserTime() + p.cmd.ProcessState.SystemTime()
}

// Serve makes this process the helper that env asks for, if it asks for
// one: it decodes the task, runs do with it and exits, with status 1 and
// the error on standard error if there is one. Otherwise it returns at
// once. A helper's package calls it in an init function.
func Serve[T any](env string, do func(T) error) {
	var t T
	ok, err := task(env, &t)
	if !ok {
		return
	}
	if err == nil {
		err = do(t)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "helper %s: %v\n", env, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// task decodes the task of env into t and reports whether env asks for
// one.
func task(env string, t any) (bool, error) {
	spec := os.Getenv(env)
	if spec == "" {
		return false, nil
	}
	if err := json.Unmarshal([]byte(spec), t); err != nil {
		return true, fmt.Errorf("decode task: %w", err)
	}
	return true, nil
}
