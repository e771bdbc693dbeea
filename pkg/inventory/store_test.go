package inventory

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestStore(t *testing.T) {
	s := NewStore()
	s.Set(map[string]Info{
		"eu-prod": {Labels: map[string]string{"env": "prod", "region": "eu"}},
		"us-prod": {Labels: map[string]string{"env": "prod", "region": "us"}},
		"eu-dev":  {Labels: map[string]string{"env": "dev", "region": "eu"}},
		"bare":    {},
	})
	tests := []struct {
		name     string
		selector string
		names    []string
		want     []string
	}{
		{name: "equality", selector: "env=prod", want: []string{"eu-prod", "us-prod"}},
		{name: "set", selector: "region in (eu),env!=dev", want: []string{"eu-prod"}},
		{name: "absent key matches unlabelled", selector: "!env", want: []string{"bare"}},
		{name: "everything", selector: "", want: []string{"bare", "eu-dev", "eu-prod", "us-prod"}},
		{name: "narrowed to names", selector: "region=eu", names: []string{"eu-dev", "us-prod", "unknown", "eu-dev"}, want: []string{"eu-dev"}},
		{name: "nothing", selector: "env=qa", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sel, err := ParseSelector(tt.selector)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := s.Narrow(tt.names, sel)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if _, err := ParseSelector("env in (prod"); err == nil {
		t.Error("a bad selector parsed")
	}
	got := s.CountByLabel(map[string]int{"eu-prod": 3, "eu-dev": 2, "us-prod": 1, "bare": 7, "unknown": 5}, "region")
	if diff := cmp.Diff(map[string]int{"eu": 5, "us": 1}, got); diff != "" {
		t.Errorf("CountByLabel (-want +got):\n%s", diff)
	}
	if i, _ := s.Get("bare"); i.Labels == nil {
		t.Error("Get returned nil labels")
	}
}

func TestStoreWatch(t *testing.T) {
	s := NewStore()
	v0, changed := s.Watch()
	s.Set(map[string]Info{})
	if changed.Err() != nil {
		t.Fatal("a Set that changes nothing ended the watch")
	}
	s.Set(map[string]Info{"a": {Labels: map[string]string{"x": "1"}}})
	if changed.Err() == nil {
		t.Fatal("a change did not end the watch")
	}
	v1, changed := s.Watch()
	if v1 != v0+1 || changed.Err() != nil {
		t.Fatalf("version %d after %d, new watch ended: %v", v1, v0, changed.Err())
	}
	healthy := true
	s.Set(map[string]Info{"a": {Labels: map[string]string{"x": "1"}, ControlPlaneHealthy: &healthy}})
	if changed.Err() == nil {
		t.Fatal("a condition change did not end the watch")
	}
}
