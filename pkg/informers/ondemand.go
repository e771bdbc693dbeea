package informers

import (
	"io"
	"net/http"
	"sync"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// onDemandTransport is the transport of a cluster's requests other than
// watches (discovery, lists, CRD reads): it builds the transport when a
// request needs it and drops it once no request has been in flight for
// idle. Those requests come in bursts, at the start and at each relist; in
// between, client-go's transport would keep what its busiest moment needed
// (its maps of waiting and idle connections, which never shrink, a TLS
// configuration, an HTTP/2 transport registered on it): kilobytes per
// cluster, held by every idle cluster of a fleet.
type onDemandTransport struct {
	build func() (http.RoundTripper, error)
	idle  time.Duration
	timer *time.Timer // runs expire; armed while armed is set

	mu       sync.Mutex
	done     sync.Cond // signalled when armed clears
	rt       http.RoundTripper
	inFlight int       // requests whose response body is not closed yet
	lastUsed time.Time // when inFlight last became 0
	armed    bool      // expire is scheduled or running
	closed   bool
}

// newOnDemandTransport returns a transport that starts with rt (nil: none
// yet) and builds another with build whenever a request finds none.
func newOnDemandTransport(idle time.Duration, rt http.RoundTripper, build func() (http.RoundTripper, error)) *onDemandTransport {
	t := &onDemandTransport{build: build, idle: idle, rt: rt}
	t.done.L = &t.mu
	t.timer = time.AfterFunc(time.Hour, t.expire)
	t.timer.Stop()
	return t
}

// RoundTrip sends req on the transport, built first if it was dropped. The
// request counts as in flight until its response body is closed.
func (t *onDemandTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rt, err := t.acquire()
	if err != nil {
		return nil, err
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.release()
		return nil, err
	}
	resp.Body = &releasingBody{ReadCloser: resp.Body, release: t.release}
	return resp, nil
}

func (t *onDemandTransport) acquire() (http.RoundTripper, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.rt == nil {
		// Building parses the TLS configuration (reading its files, if
		// any) and opens no connection: holding the lock keeps concurrent
		// first requests on one transport.
		rt, err := t.build()
		if err != nil {
			return nil, err
		}
		t.rt = rt
	}
	t.inFlight++
	return t.rt, nil
}

func (t *onDemandTransport) release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.inFlight--
	if t.inFlight > 0 {
		return
	}
	t.lastUsed = time.Now()
	if !t.armed && !t.closed {
		t.armed = true
		t.timer.Reset(t.idle)
	}
}

// expire drops the transport once it has been unused for idle, and closes
// its idle connections; it re-arms itself while the transport is in use
// again or not idle long enough.
func (t *onDemandTransport) expire() {
	t.mu.Lock()
	var drop http.RoundTripper
	if unused := time.Since(t.lastUsed); !t.closed && t.inFlight == 0 && t.rt != nil && unused < t.idle {
		t.timer.Reset(t.idle - unused)
		t.mu.Unlock()
		return
	}
	if t.inFlight == 0 {
		drop, t.rt = t.rt, nil
	}
	t.mu.Unlock()
	// Outside the lock: closing connections is I/O. Close waits for it.
	if drop != nil {
		utilnet.CloseIdleConnectionsFor(drop)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed && t.inFlight == 0 && t.rt != nil {
		// A request built another transport and ended meanwhile, while
		// this one stayed armed: its release did not arm the timer.
		t.timer.Reset(t.idle)
		return
	}
	t.armed = false
	t.done.Broadcast()
}

// Close drops the transport and closes its idle connections, and waits for
// a running expire to finish. Requests in flight complete; later ones
// build a transport that nothing drops, so Close comes last.
func (t *onDemandTransport) Close() {
	t.mu.Lock()
	t.closed = true
	if t.armed && t.timer.Stop() {
		t.armed = false
	}
	for t.armed {
		t.done.Wait()
	}
	drop := t.rt
	t.rt = nil
	t.mu.Unlock()
	if drop != nil {
		utilnet.CloseIdleConnectionsFor(drop)
	}
}

// releasingBody is a response body that ends its request's time in
// flight when closed.
type releasingBody struct {
	io.ReadCloser
	once    sync.Once
	release func()
}

func (b *releasingBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.release)
	return err
}
