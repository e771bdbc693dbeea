package wire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/fleetcache/fleetcache/pkg/index"
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
type WatchDecoder struct {
	d     *Decoder
	body  io.ReadCloser
	r     *bufio.Reader
	frame []byte
}

var _ watch.Decoder = (*WatchDecoder)(nil)

// readBuffer is the size of a watch's read buffer. A watch lives as long as
// its type is cached, in each cluster, and mostly idles: at 64 KiB, a
// thousand clusters' watches held 64 MB of buffers. An event longer than
// the buffer is read on into the frame buffer, which grows as needed.
const readBuffer = 4 << 10

// NewWatchDecoder returns the decoder of the watch response body, whose
// objects d decodes.
func NewWatchDecoder(body io.ReadCloser, d *Decoder) *WatchDecoder {
	return &WatchDecoder{d: d, body: body, r: bufio.NewReaderSize(body, readBuffer)}
}

// Close closes the response body.
func (w *WatchDecoder) Close() { _ = w.body.Close() }

// Decode returns the next event: its type and its object, an
// *index.Object for ADDED, MODIFIED, DELETED and BOOKMARK (see
// index.NewBookmark), a *metav1.Status for ERROR. It returns io.EOF at the
// end of the stream and io.ErrUnexpectedEOF when it ends inside an event.
func (w *WatchDecoder) Decode() (watch.EventType, runtime.Object, error) {
	w.frame = w.frame[:0]
	for {
		line, err := w.r.ReadSlice('\n')
		full, eof := errors.Is(err, bufio.ErrBufferFull), errors.Is(err, io.EOF)
		if err != nil && !full && !eof {
			return "", nil, err
		}
		frame := line
		if len(w.frame) > 0 || full {
			// line is only valid until the next read: keep a copy.
			w.frame = append(w.frame, line...)
			frame = w.frame
			if len(frame) > maxFrame {
				return "", nil, fmt.Errorf("watch event larger than %d bytes", maxFrame)
			}
			if full {
				continue
			}
		}
		if len(bytes.TrimSpace(frame)) == 0 {
			if eof {
				return "", nil, io.EOF
			}
			w.frame = w.frame[:0]
			continue
		}
		typ, obj, err := w.event(frame)
		if errors.Is(err, errIncomplete) {
			if eof {
				return "", nil, io.ErrUnexpectedEOF
			}
			if len(w.frame) == 0 {
				w.frame = append(w.frame, line...)
			}
			continue
		}
		return typ, obj, err
	}
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
		return index.NewBookmark(bookmark.Metadata.ResourceVersion, end), ve, nil
	default:
		return nil, i, fmt.Errorf("unknown watch event type %q", typ)
	}
}
