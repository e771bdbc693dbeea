package testcluster

import (
	"bufio"
	"net"
	"strings"
	"sync"
	"testing"
)

// nameServer accepts connections on 127.0.0.1 and answers each byte read
// with name and a newline, until the client closes; it stops when the test
// ends.
func nameServer(t *testing.T, name string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				for {
					if _, err := c.Read(make([]byte, 1)); err != nil {
						return
					}
					if _, err := c.Write([]byte(name + "\n")); err != nil {
						return
					}
				}
			})
		}
	})
	return ln.Addr().String()
}

// TestProxyRetarget: after Retarget, new connections reach the new target
// and the open ones stay with the old one.
func TestProxyRetarget(t *testing.T) {
	a, b := nameServer(t, "a"), nameServer(t, "b")
	p, err := StartProxy(a)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// ask writes a byte on c and returns the name of the server that answers.
	ask := func(c net.Conn, r *bufio.Reader) string {
		t.Helper()
		if _, err := c.Write([]byte("?")); err != nil {
			t.Fatal(err)
		}
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSuffix(line, "\n")
	}
	dial := func() (net.Conn, *bufio.Reader) {
		t.Helper()
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c, bufio.NewReader(c)
	}
	before, br := dial()
	if got := ask(before, br); got != "a" {
		t.Fatalf("first connection reached %q, want a", got)
	}
	p.Retarget(b)
	after, ar := dial()
	if got := ask(after, ar); got != "b" {
		t.Errorf("connection after Retarget reached %q, want b", got)
	}
	if got := ask(before, br); got != "a" {
		t.Errorf("the connection opened before Retarget now reaches %q, want a", got)
	}
}
