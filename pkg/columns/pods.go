package columns

import (
	"strconv"
	"time"
)

// pod is what printPod reads of a Pod.
type pod struct {
	Metadata struct {
		DeletionTimestamp *time.Time `json:"deletionTimestamp"`
	} `json:"metadata"`
	Spec struct {
		NodeName       string `json:"nodeName"`
		InitContainers []struct {
			Name          string `json:"name"`
			RestartPolicy string `json:"restartPolicy"`
		} `json:"initContainers"`
		// Containers is how many app containers there are.
		Containers     int
		ReadinessGates []struct {
			ConditionType string `json:"conditionType"`
		} `json:"readinessGates"`
	} `json:"spec"`
	Status struct {
		Phase             string                `json:"phase"`
		Reason            string                `json:"reason"`
		PodIP             string                `json:"podIP"`
		PodIPs            []struct{ IP string } `json:"podIPs"`
		NominatedNodeName string                `json:"nominatedNodeName"`
		Conditions        []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
			Reason string `json:"reason"`
		} `json:"conditions"`
		InitContainerStatuses []containerStatus `json:"initContainerStatuses"`
		ContainerStatuses     []containerStatus `json:"containerStatuses"`
	} `json:"status"`
}

type containerStatus struct {
	Name         string         `json:"name"`
	Ready        bool           `json:"ready"`
	Started      *bool          `json:"started"`
	RestartCount int64          `json:"restartCount"`
	State        containerState `json:"state"`
	LastState    containerState `json:"lastState"`
}

type containerState struct {
	Waiting *struct {
		Reason string `json:"reason"`
	} `json:"waiting"`
	Running    *struct{} `json:"running"`
	Terminated *struct {
		Reason     string    `json:"reason"`
		ExitCode   int32     `json:"exitCode"`
		Signal     int32     `json:"signal"`
		FinishedAt time.Time `json:"finishedAt"`
	} `json:"terminated"`
}

// condition returns the status of the Pod's condition of type t, "" when
// it has none.
func (p *pod) condition(t string) (status, reason string) {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status, c.Reason
		}
	}
	return "", ""
}

// restarts counts the restarts of containers and remembers the latest
// termination that ended one.
type restarts struct {
	count int64
	last  time.Time
}

func (r *restarts) add(cs containerStatus) {
	r.count += cs.RestartCount
	if t := cs.LastState.Terminated; t != nil && t.FinishedAt.After(r.last) {
		r.last = t.FinishedAt
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
func printPod(raw []byte, now time.Time) ([]Column, error) {
	var p pod
	if err := decodeFields(raw,
		field{"metadata.deletionTimestamp", &p.Metadata.DeletionTimestamp},
		field{"spec.nodeName", &p.Spec.NodeName},
		field{"spec.containers.#", &p.Spec.Containers},
		field{"spec.initContainers", &p.Spec.InitContainers},
		field{"spec.readinessGates", &p.Spec.ReadinessGates},
		field{"status", &p.Status},
	); err != nil {
		return nil, err
	}
	sidecar := map[string]bool{}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy == "Always" {
			sidecar[c.Name] = true
		}
	}
	total := p.Spec.Containers + len(sidecar)
	ready := 0
	status := p.Status.Phase
	if p.Status.Reason != "" {
		status = p.Status.Reason
	}
	if _, reason := p.condition("PodScheduled"); reason == "SchedulingGated" {
		status = "SchedulingGated"
	}

	// Init containers run in order: the first that has not succeeded (and
	// is not a started sidecar) says why the Pod is still initializing.
	var all, sidecars restarts
	initializing := false
	for i, cs := range p.Status.InitContainerStatuses {
		all.add(cs)
		if sidecar[cs.Name] {
			sidecars.add(cs)
		}
		t, w := cs.State.Terminated, cs.State.Waiting
		if t != nil && t.ExitCode == 0 {
			continue
		}
		if sidecar[cs.Name] && cs.Started != nil && *cs.Started {
			if cs.Ready {
				ready++
			}
			continue
		}
		initializing = true
		switch {
		case t != nil && t.Reason != "":
			status = "Init:" + t.Reason
		case t != nil:
			status = "Init:" + terminatedText(t.Signal, t.ExitCode)
		case w != nil && w.Reason != "" && w.Reason != "PodInitializing":
			status = "Init:" + w.Reason
		default:
			status = "Init:" + ratio(i, len(p.Spec.InitContainers))
		}
		break
	}
	count := all
	if initialized, _ := p.condition("Initialized"); !initializing || initialized == "True" {
		count = sidecars
		running := false
		for i := len(p.Status.ContainerStatuses) - 1; i >= 0; i-- {
			cs := p.Status.ContainerStatuses[i]
			count.add(cs)
			t, w := cs.State.Terminated, cs.State.Waiting
			switch {
			case w != nil && w.Reason != "":
				status = w.Reason
			case t != nil && t.Reason != "":
				status = t.Reason
			case t != nil:
				status = terminatedText(t.Signal, t.ExitCode)
			case cs.Ready && cs.State.Running != nil:
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
	if p.Metadata.DeletionTimestamp != nil {
		switch {
		case p.Status.Reason == "NodeLost":
			status = "Unknown"
		case p.Status.Phase != "Succeeded" && p.Status.Phase != "Failed":
			status = "Terminating"
		}
	}

	ip := p.Status.PodIP
	if len(p.Status.PodIPs) > 0 {
		ip = p.Status.PodIPs[0].IP
	}
	gates := "<none>"
	if n := len(p.Spec.ReadinessGates); n > 0 {
		met := 0
		for _, g := range p.Spec.ReadinessGates {
			if s, _ := p.condition(g.ConditionType); s == "True" {
				met++
			}
		}
		gates = ratio(met, n)
	}
	return []Column{
		{"Ready", ratio(ready, total)},
		{"Status", status},
		{"Restarts", count.text(now)},
		{"IP", none(ip)},
		{"Node", none(p.Spec.NodeName)},
		{"Nominated Node", none(p.Status.NominatedNodeName)},
		{"Readiness Gates", gates},
	}, nil
}
