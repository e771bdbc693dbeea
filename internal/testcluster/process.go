package testcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	// stopGrace is how long a process may take to exit after SIGTERM before it gets SIGKILL.
	stopGrace = 5 * time.Second
	// pollInterval is the pause between two readiness probes.
	pollInterval = 100 * time.Millisecond
	// logTailBytes is how much of a log file an error quotes.
	logTailBytes = 4096
	// portAttempts bounds the retries when a freshly picked port was taken meanwhile.
	portAttempts = 5
)

// errPortInUse marks a start that failed because the port was taken between
// picking it and binding it.
var errPortInUse = errors.New("port already in use")

// process is one child process whose output goes to a log file.
type process struct {
	name    string
	logPath string
	pid     int
	done    chan struct{} // closed once the process has been reaped
	waitErr error         // result of cmd.Wait, valid once done is closed
}

// startProcess starts bin with args in its own process group. It also starts
// the one goroutine that reaps the process; that goroutine ends when the
// process ends, which stop waits for.
func startProcess(name, bin string, args []string, logPath string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create log file of %s: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// Own process group, so that stop signals reach everything the process
	// starts; SIGKILL when the test binary dies, so that nothing lingers.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, logPath: logPath, pid: cmd.Process.Pid, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitError describes a process that ended on its own, with the tail of its
// log; it wraps errPortInUse when the log says the port was taken.
func (p *process) exitError() error {
	tail := logTail(p.logPath)
	err := fmt.Errorf("%s exited: %v; last log lines:\n%s", p.name, p.waitErr, tail)
	if strings.Contains(tail, "address already in use") {
		return fmt.Errorf("%w: %w", errPortInUse, err)
	}
	return err
}

// stop sends SIGTERM to the process group, waits up to stopGrace, then sends
// SIGKILL, and returns once the process has been reaped. It returns an error
// if the process had already ended on its own.
func (p *process) stop() error {
	if p.exited() {
		return p.exitError()
	}
	// The process is not reaped yet, so its group id cannot have been reused.
	_ = syscall.Kill(-p.pid, syscall.SIGTERM)
	timer := time.NewTimer(stopGrace)
	defer timer.Stop()
	select {
	case <-p.done:
	case <-timer.C:
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		<-p.done
	}
	return nil
}

// logTail returns the last lines of a log file, at most logTailBytes.
func logTail(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	if len(data) > logTailBytes {
		data = data[len(data)-logTailBytes:]
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	return string(bytes.TrimSpace(data))
}

// freePort returns a port on 127.0.0.1 that was free a moment ago. Another
// process may take it before we bind it; callers retry on errPortInUse.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pick a free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("pick a free port: %w", err)
	}
	return port, nil
}

// waitReady calls probe every pollInterval until it returns true, the process
// exits, or ctx ends. The last probe error is reported on timeout.
func waitReady(ctx context.Context, p *process, probe func(context.Context) (bool, error)) error {
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	var lastErr error
	for {
		if p.exited() {
			return p.exitError()
		}
		probeCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ok, err := probe(probeCtx)
		cancel()
		if ok {
			return nil
		}
		if err != nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready (last probe error: %v); last log lines:\n%s: %w",
				p.name, lastErr, logTail(p.logPath), context.Cause(ctx))
		case <-p.done:
		case <-ticker.C:
		}
	}
}

// FreeAddr returns a 127.0.0.1 address whose port is free right now, for a
// server a test starts.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	port, err := freePort()
	if err != nil {
		tb.Fatal(err)
	}
	return "127.0.0.1:" + strconv.Itoa(port)
}
