// Package servingcert keeps a TLS serving certificate in step with its
// files, so that a renewed certificate (a cert-manager Secret, a mounted
// volume whose files are swapped) is served without a restart.
package servingcert

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"
)

// Reloader serves the certificate of a pair of PEM files, read again when
// either file changes (its size or modification time, checked every
// interval). A pair that does not load, such as a certificate written
// before its key, is logged and the last good one stays in use until the
// files change again.
type Reloader struct {
	certFile, keyFile string
	interval          time.Duration
	log               klog.Logger

	cert atomic.Pointer[tls.Certificate]
	// seen are the files' stamps when they were last read; Start's own.
	seen [2]stamp
}

// stamp is what tells that a file changed.
type stamp struct {
	size, modTime int64 // modTime in nanoseconds since the epoch
}

// New loads the pair: an error if it does not load.
func New(certFile, keyFile string, interval time.Duration, log klog.Logger) (*Reloader, error) {
	r := &Reloader{certFile: certFile, keyFile: keyFile, interval: interval, log: log}
	r.seen = r.stamps()
	if err := r.load(); err != nil {
		return nil, err
	}
	return r, nil
}

// GetCertificate returns the certificate to serve, for tls.Config.
func (r *Reloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return r.cert.Load(), nil
}

// Start checks the files every interval until ctx ends.
func (r *Reloader) Start(ctx context.Context) error {
	t := time.NewTicker(r.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		now := r.stamps()
		if now == r.seen {
			continue
		}
		r.seen = now
		if err := r.load(); err != nil {
			r.log.Error(err, "Serving certificate not reloaded: the previous one stays in use until the files change again")
		}
	}
}

// load reads the pair and, if it loads, serves it.
func (r *Reloader) load() error {
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("load the serving certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return fmt.Errorf("parse the serving certificate: %w", err)
	}
	cert.Leaf = leaf
	if old := r.cert.Swap(&cert); old != nil {
		r.log.Info("Serving certificate reloaded", "subject", leaf.Subject.String(), "notAfter", leaf.NotAfter)
	}
	return nil
}

// stamps returns the files' stamps; a file that cannot be read has the
// zero stamp.
func (r *Reloader) stamps() [2]stamp {
	var out [2]stamp
	for i, name := range []string{r.certFile, r.keyFile} {
		if fi, err := os.Stat(name); err == nil {
			out[i] = stamp{size: fi.Size(), modTime: fi.ModTime().UnixNano()}
		}
	}
	return out
}
