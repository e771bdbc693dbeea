package mcp_test

import (
	"path/filepath"
	"regexp"
	"testing"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/nodetest"
)

// conformancePackage is the MCP conformance suite, pinned: the last
// version that runs on Node.js 20 (later ones import fs.globSync, which
// Node.js 22 added).
const conformancePackage = "@modelcontextprotocol/conformance@0.1.13"

// conformanceScenarios are the suite's server scenarios that apply to a
// server other than its own test server. The others call the tools,
// prompts and resources of that server by name (test_error_handling,
// json_schema_2020_12_tool, test_simple_prompt, test://template/…) or
// features fleetcache does not offer (completion, resource
// subscriptions, server-sent requests such as sampling and elicitation);
// server-sse-polling and server-sse-multiple-streams check nothing of a
// stateless server (no GET stream).
var conformanceScenarios = []string{
	"server-initialize",
	"ping",
	"logging-set-level",
	"tools-list",
	"resources-list",
	"prompts-list",
	"dns-rebinding-protection",
}

// passed is the suite's closing line.
var passed = regexp.MustCompile(`Passed: (\d+)/(\d+), (\d+) failed`)

// TestConformance runs the conformance suite's server scenarios against
// /mcp. The suite sends no token: the aggregator runs without
// authentication, as on a developer's loopback.
func TestConformance(t *testing.T) {
	f := startFleet(t, app.AuthOptions{})
	dir := nodetest.Install(t, conformancePackage)
	cli := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	for _, s := range conformanceScenarios {
		t.Run(s, func(t *testing.T) {
			out := nodetest.Run(t, dir, cli, "server", "--url", f.url, "--scenario", s)
			m := passed.FindSubmatch(out)
			if m == nil || string(m[1]) != string(m[2]) || string(m[3]) != "0" || string(m[1]) == "0" {
				t.Errorf("scenario %s: %s", s, out)
			} else {
				t.Logf("%s: %s of %s checks passed", s, m[1], m[2])
			}
		})
	}
}
