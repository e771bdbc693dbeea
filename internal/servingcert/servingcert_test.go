package servingcert

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetcache/fleetcache/internal/testcert"
	"github.com/go-logr/logr/funcr"
)

// pair returns a self-signed certificate for name and its key, PEM.
func pair(t *testing.T, name string) (cert, key []byte) {
	p := testcert.New(t, name)
	return p.Cert, p.Key
}

func write(t *testing.T, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(name, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// logs collects what a logger writes.
type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) add(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, args)
}

// count returns how many lines contain s.
func (l *logs) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestReloader: a renewed pair is served once its files change; a pair
// that does not load is logged and the last good one stays in use.
func TestReloader(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	certA, keyA := pair(t, "a")
	write(t, certFile, certA)
	write(t, keyFile, keyA)
	var l logs
	r, err := New(certFile, keyFile, 10*time.Millisecond, funcr.New(l.add, funcr.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	served := func() string {
		c, err := r.GetCertificate(nil)
		if err != nil || c == nil {
			t.Fatalf("GetCertificate: %v, %v", c, err)
		}
		return c.Leaf.Subject.CommonName
	}
	if got := served(); got != "a" {
		t.Fatalf("serving %q, want a", got)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	certB, keyB := pair(t, "b")
	write(t, certFile, certB)
	write(t, keyFile, keyB)
	waitFor(t, "b to be served", func() bool { return served() == "b" })

	failed := l.count("not reloaded")
	certC, _ := pair(t, "c")
	write(t, certFile, certC) // with b's key: no pair
	waitFor(t, "the failed reload to be logged", func() bool { return l.count("not reloaded") > failed })
	if got := served(); got != "b" {
		t.Errorf("serving %q after a pair that does not load, want b", got)
	}

	certD, keyD := pair(t, "d")
	write(t, keyFile, keyD)
	write(t, certFile, certD)
	waitFor(t, "d to be served", func() bool { return served() == "d" })
}

func TestNewRefusesBadPair(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	cert, _ := pair(t, "a")
	_, otherKey := pair(t, "b")
	write(t, certFile, cert)
	write(t, keyFile, otherKey)
	if _, err := New(certFile, keyFile, time.Second, funcr.New(func(string, string) {}, funcr.Options{})); err == nil {
		t.Error("New with a key of another certificate: no error")
	}
	if _, err := New(filepath.Join(dir, "missing"), keyFile, time.Second, funcr.New(func(string, string) {}, funcr.Options{})); err == nil {
		t.Error("New with a missing file: no error")
	}
}
