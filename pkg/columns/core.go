package columns

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// printConfigMap prints Data: how many keys data and binaryData hold.
func printConfigMap(raw []byte, _ time.Time) ([]Column, error) {
	var c struct {
		Data       map[string]json.RawMessage `json:"data"`
		BinaryData map[string]json.RawMessage `json:"binaryData"`
	}
	if err := decode(raw, &c); err != nil {
		return nil, err
	}
	return []Column{{"Data", itoa(len(c.Data) + len(c.BinaryData))}}, nil
}

// printSecret returns the columns of a Secret: Name, Type and Data, how
// many keys data holds ("<unknown>" when the data was not cached).
func printSecret(name Column, raw []byte, dataDropped bool) []Column {
	var s struct {
		Type string                     `json:"type"`
		Data map[string]json.RawMessage `json:"data"`
	}
	if err := decode(raw, &s); err != nil {
		return []Column{name}
	}
	data := itoa(len(s.Data))
	if dataDropped {
		data = "<unknown>"
	}
	return []Column{name, {"Type", s.Type}, {"Data", data}}
}

// printNamespace prints Status, the namespace's phase.
func printNamespace(raw []byte, _ time.Time) ([]Column, error) {
	var n struct {
		Status struct {
			Phase string `json:"phase"`
		} `json:"status"`
	}
	if err := decode(raw, &n); err != nil {
		return nil, err
	}
	return []Column{{"Status", n.Status.Phase}}, nil
}

// Node roles come from labels node-role.kubernetes.io/<role> and
// kubernetes.io/role=<role>.
const (
	nodeRolePrefix = "node-role.kubernetes.io/"
	nodeRoleLabel  = "kubernetes.io/role"
)

// printNode prints Status, Roles, Version, Internal-IP, External-IP,
// OS-Image, Kernel-Version (with the architecture) and Container-Runtime.
// Status is Ready,
// NotReady or Unknown (no Ready condition), then SchedulingDisabled for a
// cordoned node.
func printNode(raw []byte, _ time.Time) ([]Column, error) {
	var n struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
		Spec struct {
			Unschedulable bool `json:"unschedulable"`
		} `json:"spec"`
		Status struct {
			Conditions []struct {
				Type   string `json:"type"`
				Status string `json:"status"`
			} `json:"conditions"`
			Addresses []struct {
				Type    string `json:"type"`
				Address string `json:"address"`
			} `json:"addresses"`
			NodeInfo struct {
				KubeletVersion          string `json:"kubeletVersion"`
				OSImage                 string `json:"osImage"`
				KernelVersion           string `json:"kernelVersion"`
				ContainerRuntimeVersion string `json:"containerRuntimeVersion"`
				Architecture            string `json:"architecture"`
			} `json:"nodeInfo"`
		} `json:"status"`
	}
	if err := decode(raw, &n); err != nil {
		return nil, err
	}
	status := "Unknown"
	// The last Ready condition counts, should there be several.
	for _, c := range n.Status.Conditions {
		if c.Type == "Ready" {
			status = "NotReady"
			if c.Status == "True" {
				status = "Ready"
			}
		}
	}
	if n.Spec.Unschedulable {
		status += ",SchedulingDisabled"
	}
	var roles []string
	for k, v := range n.Metadata.Labels {
		if role, ok := strings.CutPrefix(k, nodeRolePrefix); ok && role != "" {
			roles = append(roles, role)
		} else if k == nodeRoleLabel && v != "" {
			roles = append(roles, v)
		}
	}
	slices.Sort(roles)
	roles = slices.Compact(roles)
	address := func(typ string) string {
		for _, a := range n.Status.Addresses {
			if a.Type == typ {
				return a.Address
			}
		}
		return "<none>"
	}
	unknown := func(s string) string {
		if s == "" {
			return "<unknown>"
		}
		return s
	}
	info := n.Status.NodeInfo
	kernel := unknown(info.KernelVersion)
	if info.Architecture != "" {
		kernel += " (" + info.Architecture + ")"
	}
	return []Column{
		{"Status", status},
		{"Roles", none(strings.Join(roles, ","))},
		{"Version", info.KubeletVersion},
		{"Internal-IP", address("InternalIP")},
		{"External-IP", address("ExternalIP")},
		{"OS-Image", unknown(info.OSImage)},
		{"Kernel-Version", kernel},
		{"Container-Runtime", unknown(info.ContainerRuntimeVersion)},
	}, nil
}

// accessModes prints access modes as kubectl abbreviates them, in this
// order, each once.
func accessModes(modes []string) string {
	var out []string
	for _, m := range []struct{ mode, short string }{
		{"ReadWriteOnce", "RWO"}, {"ReadOnlyMany", "ROX"}, {"ReadWriteMany", "RWX"}, {"ReadWriteOncePod", "RWOP"},
	} {
		if slices.Contains(modes, m.mode) {
			out = append(out, m.short)
		}
	}
	return strings.Join(out, ",")
}

// storageClassAnnotation names the storage class before
// spec.storageClassName existed; it still wins over the field.
const storageClassAnnotation = "volume.beta.kubernetes.io/storage-class"

// volumeMeta is what the volume printers read of metadata.
type volumeMeta struct {
	Annotations       map[string]string `json:"annotations"`
	DeletionTimestamp *time.Time        `json:"deletionTimestamp"`
}

// volumeSpec is what the volume printers read of the spec of claims and
// volumes alike.
type volumeSpec struct {
	StorageClassName          string  `json:"storageClassName"`
	VolumeAttributesClassName *string `json:"volumeAttributesClassName"`
	VolumeMode                *string `json:"volumeMode"`
}

// storageClass is the annotation's class, else the field's.
func (m volumeMeta) storageClass(field string) string {
	if c, ok := m.Annotations[storageClassAnnotation]; ok {
		return c
	}
	return field
}

// phase is the phase, or Terminating once deleted.
func (m volumeMeta) phase(p string) string {
	if m.DeletionTimestamp != nil {
		return "Terminating"
	}
	return p
}

func unset(s *string) string {
	if s == nil || *s == "" {
		return "<unset>"
	}
	return *s
}

// quantity prints a quantity in canonical form ("1Gi"), "" when absent.
func quantity(q *resource.Quantity) string {
	if q == nil {
		return ""
	}
	return q.String()
}

// printPersistentVolumeClaim prints Status, Volume, Capacity, Access
// Modes, StorageClass, VolumeAttributesClass and VolumeMode. Capacity and
// Access Modes are the bound volume's, empty while unbound.
func printPersistentVolumeClaim(raw []byte, _ time.Time) ([]Column, error) {
	var c struct {
		Metadata volumeMeta `json:"metadata"`
		Spec     struct {
			volumeSpec
			VolumeName string `json:"volumeName"`
		} `json:"spec"`
		Status struct {
			Phase       string   `json:"phase"`
			AccessModes []string `json:"accessModes"`
			Capacity    struct {
				Storage *resource.Quantity `json:"storage"`
			} `json:"capacity"`
		} `json:"status"`
	}
	if err := decode(raw, &c); err != nil {
		return nil, err
	}
	var capacity, modes string
	if c.Spec.VolumeName != "" {
		capacity, modes = quantity(c.Status.Capacity.Storage), accessModes(c.Status.AccessModes)
	}
	return []Column{
		{"Status", c.Metadata.phase(c.Status.Phase)},
		{"Volume", c.Spec.VolumeName},
		{"Capacity", capacity},
		{"Access Modes", modes},
		{"StorageClass", c.Metadata.storageClass(c.Spec.StorageClassName)},
		{"VolumeAttributesClass", unset(c.Spec.VolumeAttributesClassName)},
		{"VolumeMode", unset(c.Spec.VolumeMode)},
	}, nil
}

// printPersistentVolume prints Capacity, Access Modes, Reclaim Policy,
// Status, Claim, StorageClass, VolumeAttributesClass, Reason and
// VolumeMode.
func printPersistentVolume(raw []byte, _ time.Time) ([]Column, error) {
	var v struct {
		Metadata volumeMeta `json:"metadata"`
		Spec     struct {
			Capacity struct {
				Storage *resource.Quantity `json:"storage"`
			} `json:"capacity"`
			AccessModes                   []string `json:"accessModes"`
			PersistentVolumeReclaimPolicy string   `json:"persistentVolumeReclaimPolicy"`
			ClaimRef                      *struct {
				Namespace string `json:"namespace"`
				Name      string `json:"name"`
			} `json:"claimRef"`
			volumeSpec
		} `json:"spec"`
		Status struct {
			Phase  string `json:"phase"`
			Reason string `json:"reason"`
		} `json:"status"`
	}
	if err := decode(raw, &v); err != nil {
		return nil, err
	}
	var claim string
	if r := v.Spec.ClaimRef; r != nil {
		claim = r.Namespace + "/" + r.Name
	}
	return []Column{
		{"Capacity", quantity(v.Spec.Capacity.Storage)},
		{"Access Modes", accessModes(v.Spec.AccessModes)},
		{"Reclaim Policy", v.Spec.PersistentVolumeReclaimPolicy},
		{"Status", v.Metadata.phase(v.Status.Phase)},
		{"Claim", claim},
		{"StorageClass", v.Metadata.storageClass(v.Spec.StorageClassName)},
		{"VolumeAttributesClass", unset(v.Spec.VolumeAttributesClassName)},
		{"Reason", v.Status.Reason},
		{"VolumeMode", unset(v.Spec.VolumeMode)},
	}, nil
}

// eventObject is the object an Event is about.
type eventObject struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	FieldPath string `json:"fieldPath"`
}

// eventSource is a core Event's source.
type eventSource struct {
	Component string `json:"component"`
	Host      string `json:"host"`
}

// event is what printEvent reads of an Event of the core group, or of
// events.k8s.io, whose fields of other names say the same (the API server
// serves both from one object).
type event struct {
	InvolvedObject     eventObject `json:"involvedObject"`
	Reason             string      `json:"reason"`
	Message            string      `json:"message"`
	Type               string      `json:"type"`
	Source             eventSource `json:"source"`
	ReportingComponent string      `json:"reportingComponent"`
	ReportingInstance  string      `json:"reportingInstance"`
	FirstTimestamp     *time.Time  `json:"firstTimestamp"`
	LastTimestamp      *time.Time  `json:"lastTimestamp"`
	EventTime          *time.Time  `json:"eventTime"`
	Count              int32       `json:"count"`
	Series             *struct {
		Count            int32      `json:"count"`
		LastObservedTime *time.Time `json:"lastObservedTime"`
	} `json:"series"`

	// events.k8s.io's names.
	Regarding                *eventObject `json:"regarding"`
	Note                     string       `json:"note"`
	DeprecatedSource         *eventSource `json:"deprecatedSource"`
	ReportingController      string       `json:"reportingController"`
	DeprecatedFirstTimestamp *time.Time   `json:"deprecatedFirstTimestamp"`
	DeprecatedLastTimestamp  *time.Time   `json:"deprecatedLastTimestamp"`
	DeprecatedCount          int32        `json:"deprecatedCount"`
}

// fromEventsAPI moves the fields of events.k8s.io's names to the core
// group's.
func (e *event) fromEventsAPI() {
	if e.Regarding != nil {
		e.InvolvedObject = *e.Regarding
	}
	if e.DeprecatedSource != nil {
		e.Source = *e.DeprecatedSource
	}
	e.Message = cmp.Or(e.Message, e.Note)
	e.ReportingComponent = cmp.Or(e.ReportingComponent, e.ReportingController)
	e.FirstTimestamp = cmp.Or(e.FirstTimestamp, e.DeprecatedFirstTimestamp)
	e.LastTimestamp = cmp.Or(e.LastTimestamp, e.DeprecatedLastTimestamp)
	e.Count = cmp.Or(e.Count, e.DeprecatedCount)
}

// printEvent prints Last Seen, Type, Reason, Object, Subobject, Source,
// Message, First Seen and Count (For adds Name last, as the server's Event
// table has it), for Events of the core group and of events.k8s.io. First
// Seen is firstTimestamp, else eventTime; Last Seen is the series' last
// observation, else lastTimestamp, else First Seen.
func printEvent(raw []byte, now time.Time) ([]Column, error) {
	var e event
	if err := decode(raw, &e); err != nil {
		return nil, err
	}
	e.fromEventsAPI()
	at := func(t *time.Time) string {
		if t == nil {
			return since(time.Time{}, now)
		}
		return since(*t, now)
	}
	first := at(e.FirstTimestamp)
	if e.FirstTimestamp == nil || e.FirstTimestamp.IsZero() {
		first = at(e.EventTime)
	}
	last := at(e.LastTimestamp)
	if e.LastTimestamp == nil || e.LastTimestamp.IsZero() {
		last = first
	}
	count := e.Count
	switch {
	case e.Series != nil:
		last, count = at(e.Series.LastObservedTime), e.Series.Count
	case count == 0:
		count = 1
	}
	object := strings.ToLower(e.InvolvedObject.Kind)
	if e.InvolvedObject.Name != "" {
		object += "/" + e.InvolvedObject.Name
	}
	source := e.Source.Component
	if source == "" {
		source = e.ReportingComponent
	}
	if host := cmp.Or(e.Source.Host, e.ReportingInstance); host != "" {
		source += ", " + host
	}
	return []Column{
		{"Last Seen", last},
		{"Type", e.Type},
		{"Reason", e.Reason},
		{"Object", object},
		{"Subobject", e.InvolvedObject.FieldPath},
		{"Source", source},
		{"Message", strings.TrimSpace(e.Message)},
		{"First Seen", first},
		{"Count", itoa(count)},
	}, nil
}
