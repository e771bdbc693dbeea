package testcluster

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// Proxy forwards TCP connections from a port of its own on 127.0.0.1 to an
// API server, so a test can partition a client from a server that stays up:
// Cut drops every connection and refuses new ones, Restore accepts again on
// the same port. Retarget changes where new connections go, as a Service
// does once a stopping replica has left its endpoints. Create it with
// Cluster.StartProxy; Close stops it.
type Proxy struct {
	addr string

	mu sync.Mutex
	// targets are dialed in order: a connection goes to the first that
	// accepts it, as a Service in front of replicas sends it to a ready
	// one.
	targets []string
	ln      net.Listener // nil while cut
	conns   map[net.Conn]struct{}
	closed  bool
	wg      sync.WaitGroup // accept loops and copies
}

// StartProxy starts a Proxy to the cluster's API server. The caller closes it.
func (c *Cluster) StartProxy() (*Proxy, error) {
	return StartProxy(strings.TrimPrefix(c.URL(), "https://"))
}

// StartProxy starts a Proxy to targets, host:ports on loopback (the
// aggregators' listeners, say): each connection goes to the first that
// accepts it. The caller closes it.
func StartProxy(targets ...string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy listen: %w", err)
	}
	p := &Proxy{targets: targets, addr: ln.Addr().String(), conns: map[net.Conn]struct{}{}}
	p.serve(ln)
	return p, nil
}

// Addr returns the proxy's host:port.
func (p *Proxy) Addr() string { return p.addr }

// URL returns the proxy's address as an API server URL; the API server's
// certificate is valid for it (127.0.0.1).
func (p *Proxy) URL() string { return "https://" + p.addr }

// Config returns a copy of cfg (a Cluster's AdminConfig or UserConfig) that
// reaches the API server through the proxy.
func (p *Proxy) Config(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Host = p.URL()
	return cfg
}

// Cut closes the listening port, so new connections are refused, and every
// open connection, both ways, as a network partition that resets them would.
func (p *Proxy) Cut() {
	p.mu.Lock()
	ln := p.ln
	p.ln = nil
	conns := p.conns
	p.conns = map[net.Conn]struct{}{}
	p.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
	}
	for c := range conns {
		_ = c.Close()
	}
}

// Restore listens on the proxy's port again. Another process may have taken
// the port meanwhile; Restore retries for a few seconds, then fails.
func (p *Proxy) Restore() error {
	var (
		ln  net.Listener
		err error
	)
	for range 50 {
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			p.serve(ln)
			return nil
		}
		time.Sleep(100 * time.Millisecond) // the port is another process's: nothing to poll
	}
	return fmt.Errorf("proxy: listen on %s again: %w", p.addr, err)
}

// Retarget sends the connections accepted from now on to targets (as
// StartProxy's); those open stay with the target they have.
func (p *Proxy) Retarget(targets ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.targets = targets
}

// Close cuts the proxy for good and waits for its goroutines.
func (p *Proxy) Close() {
	p.Cut()
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		_ = ln.Close()
		return
	}
	p.ln = ln
	p.mu.Unlock()
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed by Cut
			}
			p.forward(c)
		}
	})
}

// forward connects c to the first target that accepts and copies both
// ways until either side ends or Cut closes them.
func (p *Proxy) forward(c net.Conn) {
	var up net.Conn
	err := errors.New("no target")
	p.mu.Lock()
	targets := p.targets
	p.mu.Unlock()
	for _, t := range targets {
		if up, err = net.Dial("tcp", t); err == nil {
			break
		}
	}
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	if p.ln == nil { // cut while dialing
		p.mu.Unlock()
		_ = c.Close()
		_ = up.Close()
		return
	}
	p.conns[c], p.conns[up] = struct{}{}, struct{}{}
	p.mu.Unlock()
	pipe := func(dst, src net.Conn) {
		// Any end, a reset included, ends the pair.
		_, _ = io.Copy(dst, src)
		_ = dst.Close()
		_ = src.Close()
		p.mu.Lock()
		delete(p.conns, dst)
		delete(p.conns, src)
		p.mu.Unlock()
	}
	p.wg.Go(func() { pipe(up, c) })
	p.wg.Go(func() { pipe(c, up) })
}
