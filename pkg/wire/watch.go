package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// maxFrame bounds one watch event: an object is at most a few MiB (etcd
// refuses larger values), and a stream that never ends an event must not
// take all memory.
const maxFrame = 64 << 20

// WatchDecoder reads a watch response, one event at a time. It implements
// watch.Decoder, so that apimachinery's StreamWatcher runs it as client-go
// runs its own.
//
// The API server writes each event as one line of compact JSON. The
// decoder reads a line and decodes the event in it; when the line does not
// hold a whole event (a stream that is not compact), it reads on, line by
// line, until the event is whole.
//
// A watch lives as long as its type is cached, in every cluster, and
// mostly waits: each one a fleet holds for every type of a thousand
// clusters costs what it keeps between events. It waits with a small
// buffer of its own, and takes a larger one from a pool shared by every
// watch only while an event does not fit in it.
type WatchDecoder struct {
	d    *Decoder
	body io.ReadCloser
	// data holds what was read and not yet decoded, in small or, while an
	// event does not fit there, in pooled.
	data   []byte
	small  [smallRead]byte
	pooled *[]byte
	// err is the body's error that came with its last bytes, for the next
	// read.
	err error
}

var _ watch.Decoder = (*WatchDecoder)(nil)

// smallRead is the size of the buffer a watch keeps: bookmarks and small
// events fit in it.
const smallRead = 512

// readBuffers are the larger buffers of the events that do not fit in a
// watch's own: at 64 KiB per watch, a thousand clusters' watches held 64 MB
// of buffers, at 4 KiB still 4 MB per type. A buffer grown past
// maxPooledRead by a large event goes to the collector instead.
var readBuffers = sync.Pool{New: func() any {
	b := make([]byte, 0, 16<<10)
	return &b
}}

const maxPooledRead = 256 << 10

// NewWatchDecoder returns the decoder of the watch response body, whose
// objects d decodes.
func NewWatchDecoder(body io.ReadCloser, d *Decoder) *WatchDecoder {
	// A watch lives long and its events come one at a time: a chunk
	// shared by the Text of later objects would be kept for each watch
	// (thousands in a fleet).
	d.textChunk = 0
	w := &WatchDecoder{d: d, body: body}
	w.data = w.small[:0]
	return w
}

// Close closes the response body.
func (w *WatchDecoder) Close() { _ = w.body.Close() }

// Decode returns the next event: its type and its object, a *Decoded for
// ADDED, MODIFIED and DELETED, an *object.Object for BOOKMARK (see
// object.NewBookmark), a *metav1.Status for ERROR. It returns io.EOF at the
// end of the stream and io.ErrUnexpectedEOF when it ends inside an event.
func (w *WatchDecoder) Decode() (watch.EventType, runtime.Object, error) {
	scanned := 0 // w.data[:scanned] holds no line end, or lines of an unfinished event
	for {
		if i := bytes.IndexByte(w.data[scanned:], '\n'); i >= 0 {
			end := scanned + i + 1
			frame := w.data[:end]
			if len(bytes.TrimSpace(frame)) == 0 {
				w.consume(end)
				scanned = 0
				continue
			}
			typ, obj, err := w.event(frame)
			if errors.Is(err, errIncomplete) {
				scanned = end // the event goes on on the next line
				continue
			}
			w.consume(end)
			return typ, obj, err
		}
		scanned = len(w.data)
		if len(w.data) > maxFrame {
			return "", nil, fmt.Errorf("watch event larger than %d bytes", maxFrame)
		}
		if err := w.read(); err != nil {
			if !errors.Is(err, io.EOF) {
				return "", nil, err
			}
			// The stream ended: an event without its line end is whole
			// or cut.
			if len(bytes.TrimSpace(w.data)) == 0 {
				return "", nil, io.EOF
			}
			typ, obj, err := w.event(w.data)
			if errors.Is(err, errIncomplete) {
				return "", nil, io.ErrUnexpectedEOF
			}
			w.consume(len(w.data))
			return typ, obj, err
		}
	}
}

// read reads more of the body after w.data, into a larger buffer when
// w.data fills its own.
func (w *WatchDecoder) read() error {
	if len(w.data) == cap(w.data) {
		var next []byte
		if w.pooled == nil {
			w.pooled = readBuffers.Get().(*[]byte)
			next = (*w.pooled)[:0]
		}
		if cap(next) < 2*len(w.data) {
			next = make([]byte, 0, 2*len(w.data))
		}
		w.data = append(next, w.data...)
	}
	if w.err != nil {
		return w.err
	}
	// As bufio.Reader does: a body that keeps returning nothing and no
	// error is broken.
	for range 100 {
		n, err := w.body.Read(w.data[len(w.data):cap(w.data)])
		w.data = w.data[:len(w.data)+n]
		if n > 0 {
			w.err = err // for the next read, once these bytes are decoded
			return nil
		}
		if err != nil {
			return err
		}
	}
	return io.ErrNoProgress
}

// consume drops w.data[:n], decoded, and moves what follows back into the
// watch's own buffer when it fits there.
func (w *WatchDecoder) consume(n int) {
	rest := w.data[n:]
	if w.pooled != nil && len(rest) <= smallRead {
		large := w.data[:0]
		w.data = w.small[:copy(w.small[:], rest)] // before another watch may take the buffer
		if cap(large) <= maxPooledRead {
			*w.pooled = large
			readBuffers.Put(w.pooled)
		}
		w.pooled = nil
		return
	}
	w.data = w.data[:copy(w.data, rest)]
}

// event decodes the watch event in b.
func (w *WatchDecoder) event(b []byte) (watch.EventType, runtime.Object, error) {
	i, err := expect(b, 0, '{')
	if err != nil {
		return "", nil, err
	}
	var typ watch.EventType
	var obj runtime.Object
	objStart, objEnd := -1, -1
	for first := true; ; first = false {
		ks, ke, esc, vi, done, err := nextKey(b, i, first)
		if err != nil {
			return "", nil, err
		}
		if done {
			i = vi
			break
		}
		switch string(name(b, ks, ke, esc)) {
		case "type":
			vs, ve, _, err := w.d.sc.skipValue(b, vi)
			if err != nil {
				return "", nil, err
			}
			if b[vs] != '"' {
				return "", nil, syntaxError(vs, "the event's type is not a string")
			}
			_, sesc, _ := scanString(b, vs)
			s, err := stringValue(b, vs, ve, sesc)
			if err != nil {
				return "", nil, err
			}
			typ, i = watch.EventType(s), ve
			continue
		case "object":
			if typ != "" {
				// The server sends the type first: decode in this pass.
				if obj, i, err = w.object(typ, b, vi); err != nil {
					return "", nil, err
				}
				continue
			}
			vs, ve, _, err := w.d.sc.skipValue(b, vi)
			if err != nil {
				return "", nil, err
			}
			objStart, objEnd, i = vs, ve, ve
			continue
		}
		if _, i, _, err = w.d.sc.skipValue(b, vi); err != nil {
			return "", nil, err
		}
	}
	if i = skipSpace(b, i); i != len(b) {
		return "", nil, syntaxError(i, "data after the event")
	}
	if obj == nil && objStart >= 0 {
		if obj, _, err = w.object(typ, b[:objEnd], objStart); err != nil {
			return "", nil, err
		}
	}
	if obj == nil {
		return "", nil, fmt.Errorf("watch event %q without an object", typ)
	}
	return typ, obj, nil
}

// object decodes the object of an event of type typ at or after b[i].
func (w *WatchDecoder) object(typ watch.EventType, b []byte, i int) (runtime.Object, int, error) {
	switch typ {
	case watch.Added, watch.Modified, watch.Deleted:
		o, end, err := w.d.object(b, i)
		if err != nil {
			return nil, end, err
		}
		return o, end, nil
	case watch.Bookmark, watch.Error:
		vs, ve, _, err := w.d.sc.skipValue(b, i)
		if err != nil {
			return nil, ve, err
		}
		if typ == watch.Error {
			var status metav1.Status
			if err := json.Unmarshal(b[vs:ve], &status); err != nil {
				return nil, ve, fmt.Errorf("decode watch error: %w", err)
			}
			return &status, ve, nil
		}
		var bookmark struct {
			Metadata struct {
				ResourceVersion string            `json:"resourceVersion"`
				Annotations     map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(b[vs:ve], &bookmark); err != nil {
			return nil, ve, fmt.Errorf("decode bookmark: %w", err)
		}
		end := bookmark.Metadata.Annotations[metav1.InitialEventsAnnotationKey] == "true"
		return object.NewBookmark(bookmark.Metadata.ResourceVersion, end), ve, nil
	default:
		return nil, i, fmt.Errorf("unknown watch event type %q", typ)
	}
}
