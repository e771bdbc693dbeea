package wire

import (
	goruntime "runtime"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/runtime"
)

// List decodes one list response (one page of a paged list): its items,
// as *Decoded, and its resourceVersion and continue token, in the
// list type that client-go's pager and reflector read.
func (d *Decoder) List(b []byte) (*metainternalversion.List, error) {
	list := &metainternalversion.List{}
	i, err := expect(b, 0, '{')
	if err != nil {
		return nil, err
	}
	for first := true; ; first = false {
		ks, ke, esc, vi, done, err := nextKey(b, i, first)
		if err != nil {
			return nil, err
		}
		if done {
			i = vi
			break
		}
		vi = skipSpace(b, vi)
		switch string(name(b, ks, ke, esc)) {
		case "metadata":
			if vi < len(b) && b[vi] == '{' {
				if i, err = d.listMeta(b, vi, list); err != nil {
					return nil, err
				}
				continue
			}
		case "items":
			if vi < len(b) && b[vi] == '[' {
				if i, err = d.items(b, vi, list); err != nil {
					return nil, err
				}
				continue
			}
		}
		if _, i, _, err = d.sc.skipValue(b, vi); err != nil {
			return nil, err
		}
	}
	if i = skipSpace(b, i); i != len(b) {
		return nil, syntaxError(i, "data after the list")
	}
	return list, nil
}

// listMeta reads the list's resourceVersion and continue token from the
// object at b[i].
func (d *Decoder) listMeta(b []byte, i int, list *metainternalversion.List) (int, error) {
	i++
	for first := true; ; first = false {
		ks, ke, esc, vi, done, err := nextKey(b, i, first)
		if err != nil {
			return vi, err
		}
		if done {
			return vi, nil
		}
		key := name(b, ks, ke, esc)
		vs, ve, _, err := d.sc.skipValue(b, vi)
		if err != nil {
			return ve, err
		}
		i = ve
		if b[vs] != '"' || string(key) != "resourceVersion" && string(key) != "continue" {
			continue
		}
		_, sesc, _ := scanString(b, vs)
		s, err := stringValue(b, vs, ve, sesc)
		if err != nil {
			return ve, err
		}
		if string(key) == "resourceVersion" {
			list.ResourceVersion = s
		} else {
			list.Continue = s
		}
	}
}

// items decodes the array of objects at b[i] into list.Items.
func (d *Decoder) items(b []byte, i int, list *metainternalversion.List) (int, error) {
	i++
	for first := true; ; first = false {
		if i = skipSpace(b, i); i >= len(b) {
			return i, errIncomplete
		}
		if b[i] == ']' {
			return i + 1, nil
		}
		if !first {
			if b[i] != ',' {
				return i, syntaxError(i, "want ',' or ']'")
			}
			i++
		}
		o, next, err := d.object(b, i)
		if err != nil {
			return next, err
		}
		list.Items = append(list.Items, runtime.Object(o))
		i = next
		if len(list.Items)%yieldEvery == 0 {
			// A list is the longest run of CPU work fleetcache has, and
			// at a cold start lists hold every core: without a turn now
			// and then, a query waits for a core until the scheduler
			// preempts one, 10 ms or more (docs/design.md).
			goruntime.Gosched()
		}
	}
}

// yieldEvery is how many of a list's objects the decoder decodes before
// it lets other goroutines run: about half a millisecond of Pods.
const yieldEvery = 64
