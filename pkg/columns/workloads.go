package columns

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// workload is what the printers of Deployments, ReplicaSets, StatefulSets
// and DaemonSets read.
type workload struct {
	Spec struct {
		Replicas *int32                `json:"replicas"`
		Selector *metav1.LabelSelector `json:"selector"`
	} `json:"spec"`
	template podTemplate
	Status   struct {
		Replicas          int32 `json:"replicas"`
		ReadyReplicas     int32 `json:"readyReplicas"`
		UpdatedReplicas   int32 `json:"updatedReplicas"`
		AvailableReplicas int32 `json:"availableReplicas"`
	} `json:"status"`
}

// decodeWorkload decodes what the printers read of a Deployment,
// ReplicaSet or StatefulSet.
func decodeWorkload(raw []byte) (*workload, error) {
	var w workload
	fields := append(w.template.fields("spec.template"),
		field{"spec.replicas", &w.Spec.Replicas}, field{"spec.selector", &w.Spec.Selector}, field{"status", &w.Status})
	if err := decodeFields(raw, fields...); err != nil {
		return nil, err
	}
	return &w, nil
}

// desired is spec.replicas, which the API server defaults to 1.
func (w *workload) desired() int32 {
	if w.Spec.Replicas == nil {
		return 1
	}
	return *w.Spec.Replicas
}

// printDeployment prints Ready, Up-to-date, Available, Containers, Images
// and Selector.
func printDeployment(raw []byte, _ time.Time) ([]Column, error) {
	w, err := decodeWorkload(raw)
	if err != nil {
		return nil, err
	}
	return append([]Column{
		{"Ready", ratio(w.Status.ReadyReplicas, w.desired())},
		{"Up-to-date", itoa(w.Status.UpdatedReplicas)},
		{"Available", itoa(w.Status.AvailableReplicas)},
	}, append(containersAndImages(w.template), Column{"Selector", selector(w.Spec.Selector)})...), nil
}

// printReplicaSet prints Desired, Current, Ready, Containers, Images and
// Selector.
func printReplicaSet(raw []byte, _ time.Time) ([]Column, error) {
	w, err := decodeWorkload(raw)
	if err != nil {
		return nil, err
	}
	return append([]Column{
		{"Desired", itoa(w.desired())},
		{"Current", itoa(w.Status.Replicas)},
		{"Ready", itoa(w.Status.ReadyReplicas)},
	}, append(containersAndImages(w.template), Column{"Selector", selector(w.Spec.Selector)})...), nil
}

// printStatefulSet prints Ready, Containers and Images.
func printStatefulSet(raw []byte, _ time.Time) ([]Column, error) {
	w, err := decodeWorkload(raw)
	if err != nil {
		return nil, err
	}
	return append([]Column{{"Ready", ratio(w.Status.ReadyReplicas, w.desired())}}, containersAndImages(w.template)...), nil
}

// printDaemonSet prints Desired, Current, Ready, Up-to-date, Available,
// Node Selector, Containers, Images and Selector.
func printDaemonSet(raw []byte, _ time.Time) ([]Column, error) {
	var d struct {
		selector     *metav1.LabelSelector
		template     podTemplate
		nodeSelector map[string]string
		Status       struct {
			DesiredNumberScheduled int32 `json:"desiredNumberScheduled"`
			CurrentNumberScheduled int32 `json:"currentNumberScheduled"`
			NumberReady            int32 `json:"numberReady"`
			UpdatedNumberScheduled int32 `json:"updatedNumberScheduled"`
			NumberAvailable        int32 `json:"numberAvailable"`
		} `json:"status"`
	}
	fields := append(d.template.fields("spec.template"), field{"spec.selector", &d.selector},
		field{"spec.template.spec.nodeSelector", &d.nodeSelector}, field{"status", &d.Status})
	if err := decodeFields(raw, fields...); err != nil {
		return nil, err
	}
	s := d.Status
	return append([]Column{
		{"Desired", itoa(s.DesiredNumberScheduled)},
		{"Current", itoa(s.CurrentNumberScheduled)},
		{"Ready", itoa(s.NumberReady)},
		{"Up-to-date", itoa(s.UpdatedNumberScheduled)},
		{"Available", itoa(s.NumberAvailable)},
		{"Node Selector", mapLabels(d.nodeSelector)},
	}, append(containersAndImages(d.template), Column{"Selector", selector(d.selector)})...), nil
}

// jobSpec is what printJob reads of a Job's spec, and printCronJob of its
// job template's.
type jobSpec struct {
	Completions *int32
	Parallelism *int32
	Selector    *metav1.LabelSelector
	Template    podTemplate
}

// fields are the job spec's at path (spec, or spec.jobTemplate.spec).
func (s *jobSpec) fields(path string) []field {
	return append(s.Template.fields(path+".template"), field{path + ".completions", &s.Completions},
		field{path + ".parallelism", &s.Parallelism}, field{path + ".selector", &s.Selector})
}

// printJob prints Status, Completions, Duration, Containers, Images and
// Selector. Duration runs from the start to the completion, or to now
// while the Job runs.
func printJob(raw []byte, now time.Time) ([]Column, error) {
	var j struct {
		Metadata struct {
			DeletionTimestamp *time.Time `json:"deletionTimestamp"`
		} `json:"metadata"`
		Spec   jobSpec
		Status struct {
			Succeeded      int32      `json:"succeeded"`
			StartTime      *time.Time `json:"startTime"`
			CompletionTime *time.Time `json:"completionTime"`
			Conditions     []struct {
				Type   string `json:"type"`
				Status string `json:"status"`
			} `json:"conditions"`
		} `json:"status"`
	}
	fields := append(j.Spec.fields("spec"), field{"metadata.deletionTimestamp", &j.Metadata.DeletionTimestamp}, field{"status", &j.Status})
	if err := decodeFields(raw, fields...); err != nil {
		return nil, err
	}
	holds := func(t string) bool {
		for _, c := range j.Status.Conditions {
			if c.Type == t && c.Status == "True" {
				return true
			}
		}
		return false
	}
	var status string
	switch {
	case holds("Complete"):
		status = "Complete"
	case holds("Failed"):
		status = "Failed"
	case j.Metadata.DeletionTimestamp != nil:
		status = "Terminating"
	case holds("SuccessCriteriaMet"):
		status = "SuccessCriteriaMet"
	case holds("FailureTarget"):
		status = "FailureTarget"
	case holds("Suspended"):
		status = "Suspended"
	default:
		status = "Running"
	}

	var completions string
	switch p := j.Spec.Parallelism; {
	case j.Spec.Completions != nil:
		completions = ratio(j.Status.Succeeded, *j.Spec.Completions)
	case p != nil && *p > 1:
		completions = itoa(j.Status.Succeeded) + "/1 of " + itoa(*p)
	default:
		completions = itoa(j.Status.Succeeded) + "/1"
	}

	var took string
	switch start, end := j.Status.StartTime, j.Status.CompletionTime; {
	case start == nil:
	case end == nil:
		took = since(*start, now)
	default:
		took = since(*start, *end)
	}
	return append([]Column{{"Status", status}, {"Completions", completions}, {"Duration", took}},
		append(containersAndImages(j.Spec.Template), Column{"Selector", selector(j.Spec.Selector)})...), nil
}

// printCronJob prints Schedule, Timezone, Suspend, Active, Last Schedule,
// Containers, Images and Selector.
func printCronJob(raw []byte, now time.Time) ([]Column, error) {
	var c struct {
		Spec struct {
			Schedule string
			TimeZone *string
			Suspend  *bool
			Job      jobSpec
		}
		Status struct {
			Active           []struct{} `json:"active"`
			LastScheduleTime *time.Time `json:"lastScheduleTime"`
		} `json:"status"`
	}
	fields := append(c.Spec.Job.fields("spec.jobTemplate.spec"), field{"spec.schedule", &c.Spec.Schedule},
		field{"spec.timeZone", &c.Spec.TimeZone}, field{"spec.suspend", &c.Spec.Suspend}, field{"status", &c.Status})
	if err := decodeFields(raw, fields...); err != nil {
		return nil, err
	}
	zone := "<none>"
	if c.Spec.TimeZone != nil {
		zone = *c.Spec.TimeZone
	}
	suspend := "<unset>"
	if c.Spec.Suspend != nil {
		suspend = "False"
		if *c.Spec.Suspend {
			suspend = "True"
		}
	}
	last := "<none>"
	if t := c.Status.LastScheduleTime; t != nil {
		last = since(*t, now)
	}
	tmpl := c.Spec.Job
	return append([]Column{
		{"Schedule", c.Spec.Schedule},
		{"Timezone", zone},
		{"Suspend", suspend},
		{"Active", itoa(len(c.Status.Active))},
		{"Last Schedule", last},
	}, append(containersAndImages(tmpl.Template), Column{"Selector", selector(tmpl.Selector)})...), nil
}
