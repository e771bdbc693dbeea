package mcp_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetcache/fleetcache/pkg/mcp"
)

func TestResources(t *testing.T) {
	cs := fixture(t).connect(t, "admin-token")
	list, err := cs.ListResources(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Resources) != 1 || list.Resources[0].URI != "fleetcache://clusters" {
		t.Errorf("resources %+v", list.Resources)
	}
	templates, err := cs.ListResourceTemplates(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(templates.ResourceTemplates) != 1 || templates.ResourceTemplates[0].URITemplate != "fleetcache://clusters/{name}" {
		t.Errorf("templates %+v", templates.ResourceTemplates)
	}

	read := func(uri string, out any) {
		t.Helper()
		r, err := cs.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatalf("read %s: %v", uri, err)
		}
		if len(r.Contents) != 1 || r.Contents[0].MIMEType != "application/json" {
			t.Fatalf("read %s: %+v", uri, r.Contents)
		}
		if err := json.Unmarshal([]byte(r.Contents[0].Text), out); err != nil {
			t.Fatal(err)
		}
	}
	var all []mcp.ClusterHealth
	read("fleetcache://clusters", &all)
	var names []string
	for _, c := range all {
		names = append(names, c.Name+" "+c.Status)
	}
	if diff := cmp.Diff([]string{"c1 SYNCED", "c2 SYNCED", "c3 DISCONNECTED"}, names); diff != "" {
		t.Errorf("clusters (-want +got):\n%s", diff)
	}
	var c3 mcp.ClusterHealth
	read("fleetcache://clusters/c3", &c3)
	if c3.Status != "DISCONNECTED" || !strings.Contains(c3.Message, "connection refused") || len(c3.Problems) != 5 {
		t.Errorf("c3: %+v", c3)
	}
	for _, uri := range []string{"fleetcache://clusters/c9", "fleetcache://clusters/c1/x"} {
		if _, err := cs.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: uri}); err == nil || !strings.Contains(err.Error(), "not found") {
			t.Errorf("read %s: %v, want not found", uri, err)
		}
	}
}

func TestPrompts(t *testing.T) {
	cs := fixture(t).connect(t, "admin-token")
	list, err := cs.ListPrompts(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range list.Prompts {
		names = append(names, p.Name)
	}
	if diff := cmp.Diff([]string{"whats_broken", "why_not_running_everywhere"}, slices.Sorted(slices.Values(names))); diff != "" {
		t.Errorf("prompts (-want +got):\n%s", diff)
	}
	p, err := cs.GetPrompt(t.Context(), &mcpsdk.GetPromptParams{Name: "why_not_running_everywhere",
		Arguments: map[string]string{"kind": "Deployment.apps", "name": "web", "namespace": "web"}})
	if err != nil {
		t.Fatal(err)
	}
	text := p.Messages[0].Content.(*mcpsdk.TextContent).Text
	for _, want := range []string{`Deployment.apps "web" in namespace "web"`, "cluster_health", "count_resources", "get_table", "get_resource"} {
		if !strings.Contains(text, want) {
			t.Errorf("prompt does not say %q:\n%s", want, text)
		}
	}
	if _, err := cs.GetPrompt(t.Context(), &mcpsdk.GetPromptParams{Name: "why_not_running_everywhere", Arguments: map[string]string{"kind": "Deployment.apps"}}); err == nil {
		t.Error("a prompt without its required name: no error")
	}
	p, err = cs.GetPrompt(t.Context(), &mcpsdk.GetPromptParams{Name: "whats_broken", Arguments: map[string]string{"clusterSelector": "env=prod"}})
	if err != nil {
		t.Fatal(err)
	}
	if text := p.Messages[0].Content.(*mcpsdk.TextContent).Text; !strings.Contains(text, `clusterSelector "env=prod"`) {
		t.Errorf("whats_broken:\n%s", text)
	}
}
