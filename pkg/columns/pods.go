package columns

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/tidwall/gjson"
)

// pod is what printPod reads of a Pod: views of its JSON, read with gjson
// where they are, not decoded (a Pod's status is most of what decoding it
// allocated).
type pod struct {
	status gjson.Result
}

// condition returns the status and reason of the Pod's condition of type
// t, "" when it has none.
func (p pod) condition(t string) (status, reason string) {
	p.status.Get("conditions").ForEach(func(_, c gjson.Result) bool {
		if c.Get("type").Str != t {
			return true
		}
		status, reason = c.Get("status").Str, c.Get("reason").Str
		return false
	})
	return status, reason
}

// containerStatus is what printPod reads of a container's status.
type containerStatus struct {
	name         string
	ready        bool
	started      bool
	restartCount int64
	state        containerState
	// lastFinished is when its last termination ended, zero if unknown.
	lastFinished time.Time
}

// containerState is a container's state: waiting, running or terminated
// (each flag says it is there), with the reasons, codes of a termination.
type containerState struct {
	waiting, running, terminated bool
	waitingReason                string
	terminatedReason             string
	exitCode, signal             int32
}

// containerStatusOf reads a container's status from its JSON r.
func containerStatusOf(r gjson.Result) containerStatus {
	cs := containerStatus{
		name:         r.Get("name").Str,
		ready:        r.Get("ready").Bool(),
		started:      r.Get("started").Bool(),
		restartCount: r.Get("restartCount").Int(),
	}
	state := r.Get("state")
	if w := state.Get("waiting"); present(w) {
		cs.state.waiting, cs.state.waitingReason = true, w.Get("reason").Str
	}
	cs.state.running = present(state.Get("running"))
	if t := state.Get("terminated"); present(t) {
		cs.state.terminated, cs.state.terminatedReason = true, t.Get("reason").Str
		cs.state.exitCode, cs.state.signal = int32(t.Get("exitCode").Int()), int32(t.Get("signal").Int())
	}
	if t := r.Get("lastState.terminated"); present(t) {
		// As encoding/json reads a time.Time: RFC 3339, else zero.
		cs.lastFinished, _ = time.Parse(time.RFC3339, t.Get("finishedAt").Str)
	}
	return cs
}

// present reports whether r is a value other than null, as a pointer
// field decoded from it would be non-nil.
func present(r gjson.Result) bool { return r.Exists() && r.Type != gjson.Null }

// containerStatuses reads the list of container statuses r, into buf's
// array while it fits.
func containerStatuses(r gjson.Result, buf []containerStatus) []containerStatus {
	r.ForEach(func(_, c gjson.Result) bool {
		buf = append(buf, containerStatusOf(c))
		return true
	})
	return buf
}

// restarts counts the restarts of containers and remembers the latest
// termination that ended one.
type restarts struct {
	count int64
	last  time.Time
}

func (r *restarts) add(cs containerStatus) {
	r.count += cs.restartCount
	if cs.lastFinished.After(r.last) {
		r.last = cs.lastFinished
	}
}

// String is the Restarts cell: "3", or "3 (5m ago)" once a termination
// time is known.
func (r restarts) text(now time.Time) string {
	s := strconv.FormatInt(r.count, 10)
	if r.count == 0 || r.last.IsZero() {
		return s
	}
	return s + " (" + since(r.last, now) + " ago)"
}

// terminatedText is how a terminated container without a reason shows in
// Status: its signal, else its exit code.
func terminatedText(signal, exitCode int32) string {
	if signal != 0 {
		return "Signal:" + itoa(signal)
	}
	return "ExitCode:" + itoa(exitCode)
}

// printPod prints Ready, Status, Restarts, IP, Node, Nominated Node and
// Readiness Gates.
//
// Status is the Pod's reason or phase, overridden by what its containers
// report: while an init container has not succeeded, "Init:" and its
// reason (or "Init:2/3"); then the last of the app containers, scanned from
// the last, that waits or terminated; "Terminating" once deleted.
// Restartable init containers (sidecars) count as containers once started.
// printPod prints Ready, Status, Restarts, IP, Node, Nominated Node and
// Readiness Gates.
//
// Status is the Pod's reason or phase, overridden by what its containers
// report: while an init container has not succeeded, "Init:" and its
// reason (or "Init:2/3"); then the last of the app containers, scanned from
// the last, that waits or terminated; "Terminating" once deleted.
// Restartable init containers (sidecars) count as containers once started.
func printPod(raw []byte, now time.Time) ([]Column, error) {
	// A view of raw, not a copy: the strings read are views of it too, and
	// those that reach the cells are cloned (raw is not kept).
	text := unsafe.String(unsafe.SliceData(raw), len(raw))
	spec := gjson.Get(text, "spec")
	p := pod{status: gjson.Get(text, "status")}
	if present(p.status) && !p.status.IsObject() {
		return nil, fmt.Errorf("status is a %s, not an object", p.status.Type)
	}
	initContainers := spec.Get("initContainers")
	var sidecars []string
	initCount := 0
	initContainers.ForEach(func(_, c gjson.Result) bool {
		initCount++
		if c.Get("restartPolicy").Str == "Always" {
			sidecars = append(sidecars, c.Get("name").Str)
		}
		return true
	})
	sidecar := func(name string) bool {
		for _, s := range sidecars {
			if s == name {
				return true
			}
		}
		return false
	}
	total := int(spec.Get("containers.#").Int()) + len(sidecars)
	ready := 0
	phase, reason := p.status.Get("phase").Str, p.status.Get("reason").Str
	status := phase
	if reason != "" {
		status = reason
	}
	if _, reason := p.condition("PodScheduled"); reason == "SchedulingGated" {
		status = "SchedulingGated"
	}

	// Init containers run in order: the first that has not succeeded (and
	// is not a started sidecar) says why the Pod is still initializing.
	var all, sidecarRestarts restarts
	initializing := false
	var buf [8]containerStatus
	for i, cs := range containerStatuses(p.status.Get("initContainerStatuses"), buf[:0]) {
		all.add(cs)
		if sidecar(cs.name) {
			sidecarRestarts.add(cs)
		}
		st := cs.state
		if st.terminated && st.exitCode == 0 {
			continue
		}
		if sidecar(cs.name) && cs.started {
			if cs.ready {
				ready++
			}
			continue
		}
		initializing = true
		switch {
		case st.terminated && st.terminatedReason != "":
			status = "Init:" + st.terminatedReason
		case st.terminated:
			status = "Init:" + terminatedText(st.signal, st.exitCode)
		case st.waiting && st.waitingReason != "" && st.waitingReason != "PodInitializing":
			status = "Init:" + st.waitingReason
		default:
			status = "Init:" + ratio(i, initCount)
		}
		break
	}
	count := all
	if initialized, _ := p.condition("Initialized"); !initializing || initialized == "True" {
		count = sidecarRestarts
		running := false
		statuses := containerStatuses(p.status.Get("containerStatuses"), buf[:0])
		for i := len(statuses) - 1; i >= 0; i-- {
			cs := statuses[i]
			count.add(cs)
			st := cs.state
			switch {
			case st.waiting && st.waitingReason != "":
				status = st.waitingReason
			case st.terminated && st.terminatedReason != "":
				status = st.terminatedReason
			case st.terminated:
				status = terminatedText(st.signal, st.exitCode)
			case cs.ready && st.running:
				running = true
				ready++
			}
		}
		// A container that completed while others still run does not make
		// the Pod Completed.
		if status == "Completed" && running {
			status = "NotReady"
			if readyStatus, _ := p.condition("Ready"); readyStatus == "True" {
				status = "Running"
			}
		}
	}
	if present(gjson.Get(text, "metadata.deletionTimestamp")) {
		switch {
		case reason == "NodeLost":
			status = "Unknown"
		case phase != "Succeeded" && phase != "Failed":
			status = "Terminating"
		}
	}

	ip := p.status.Get("podIP").Str
	if first := p.status.Get("podIPs.0"); first.Exists() {
		ip = first.Get("ip").Str
	}
	gates := "<none>"
	if n := int(spec.Get("readinessGates.#").Int()); n > 0 {
		met := 0
		spec.Get("readinessGates").ForEach(func(_, g gjson.Result) bool {
			if s, _ := p.condition(g.Get("conditionType").Str); s == "True" {
				met++
			}
			return true
		})
		gates = ratio(met, n)
	}
	return []Column{
		{"Ready", ratio(ready, total)},
		{"Status", strings.Clone(status)},
		{"Restarts", count.text(now)},
		{"IP", none(strings.Clone(ip))},
		{"Node", none(strings.Clone(spec.Get("nodeName").Str))},
		{"Nominated Node", none(strings.Clone(p.status.Get("nominatedNodeName").Str))},
		{"Readiness Gates", gates},
	}, nil
}
