package mcp

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ChangesInput is what_changed's arguments.
type ChangesInput struct {
	Filter
	Since  string   `json:"since,omitempty" jsonschema:"The changes after it: a duration before now (\"1h\", \"15m\", \"90s\"), an RFC 3339 time (\"2026-05-01T02:00:00Z\"), or the revision of an earlier answer (to see only what changed since that answer). Empty: every change fleetcache retains (up to the last 24 hours)."`
	Until  string   `json:"until,omitempty" jsonschema:"The changes up to it, in the same forms as since. Empty: up to now."`
	Order  Order    `json:"order,omitempty" jsonschema:"DESC (default): newest first; ASC: oldest first."`
	Fields []string `json:"fields,omitempty" jsonschema:"Up to 8 paths whose values (in the object's state after the change; for DELETED, its last state) to return with each change, e.g. [\"spec.replicas\", \"spec.containers[].image\"]."`
	Paging
}

// Change is one change of an object: what happened, when, and the
// object after it.
type Change struct {
	Type            string `json:"type" jsonschema:"ADDED, MODIFIED or DELETED, as the filter sees it: an object whose labels or fields now match it is ADDED, one that no longer matches is DELETED."`
	Time            string `json:"time,omitempty" jsonschema:"When fleetcache recorded the change, RFC 3339 (usually well under a second after the cluster made it)."`
	ResourceVersion string `json:"resourceVersion" jsonschema:"The object's resourceVersion after the change (for DELETED, its last)."`
	Item
}

// ChangesOutput is what_changed's answer.
type ChangesOutput struct {
	Summary    string   `json:"summary" jsonschema:"One line: how many changes are returned, of which types, over which time, where most happened, which clusters are stale, how to continue."`
	Returned   int      `json:"returned"`
	Changes    []Change `json:"changes" jsonschema:"The changes, in the order asked for."`
	NextCursor string   `json:"nextCursor,omitempty" jsonschema:"Pass it as after, with the same filter, since, until and order, for the next changes; absent when there are none."`
	Truncated  bool     `json:"truncated,omitempty" jsonschema:"The size budget cut the answer before first changes."`
	Since      string   `json:"since,omitempty" jsonschema:"The since this answer used, a duration turned into a time: pass it again with after."`
	Revision   string   `json:"revision" jsonschema:"Where this answer was read up to: pass it as since later to see only what changed after this answer."`
	Incomplete bool     `json:"incomplete,omitempty" jsonschema:"since reaches before the oldest change fleetcache retains: earlier changes in the range are not known."`
	Freshness
}

func (o ChangesOutput) summaryLine() string { return o.Summary }

// changesDescription is what_changed's description, written for a model.
const changesDescription = `List what changed in the fleet: the Kubernetes objects added, modified and deleted, when and in which cluster, ` +
	`from the changes fleetcache recorded (it keeps the last 24 hours at most, and only since it started), with the filters of find_resources ` +
	`(kind, cluster, cluster labels, namespace, label and field selectors, search words) and a time window (since, until: "1h", an RFC 3339 time, or an earlier answer's revision). ` +
	`Newest first by default. Returns a summary line (counts by type, the time span, where most changes happened), the changes up to a size budget ` +
	`with the values of chosen paths (fields), and nextCursor to pass as after for more. Use it to answer "what changed before this broke?" or ` +
	`"what was deleted in namespace X today?"; then get_resource reads an object's current state.`

// changesDocument is what_changed's query, with n fields (as
// findDocument): a page of changes and, on the first page, the freshness
// of the clusters the filter selects.
func changesDocument(n int) string {
	params, fields := fieldParams(n)
	return `query WhatChanged($filter: ResourceFilter, $since: String, $until: String, $first: Int, $after: String, $order: SortOrder, $fresh: Boolean!` + params + `) {
  changes(filter: $filter, since: $since, until: $until, first: $first, after: $after, order: $order) {
    edges { type time cursor resource { cluster apiVersion kind namespace name creationTimestamp resourceVersion labels` + fields + ` } }
    pageInfo { hasNextPage endCursor }
    revision truncated
  }
  resources(filter: $filter, first: 0) @include(if: $fresh) { deniedClusters staleness { cluster status currentAsOf } }
}`
}

// changeEvent is a change as changesDocument selects it.
type changeEvent struct {
	Type     string
	Time     string
	Cursor   string
	Resource json.RawMessage
}

// absoluteSince turns a since that is a duration before now into the time
// it means, so that every page of a walk has the same range; anything else
// is left to the engine to read (and to refuse in its words).
func absoluteSince(since string, now time.Time) string {
	d, err := time.ParseDuration(strings.TrimSpace(since))
	if err != nil || d < 0 {
		return since
	}
	return now.Add(-d).UTC().Format(time.RFC3339Nano)
}

func (s *Server) whatChanged(ctx context.Context, in ChangesInput) (*mcpsdk.CallToolResult, ChangesOutput, error) {
	first, err := s.pageWithFields(in.Paging, in.Fields)
	if err != nil {
		return nil, ChangesOutput{}, err
	}
	order := cmp.Or(in.Order, "DESC")
	out := ChangesOutput{Since: absoluteSince(in.Since, time.Now())}
	vars := fieldVars(in.Fields)
	vars["filter"], vars["order"] = in.Filter, order
	for k, v := range map[string]string{"since": out.Since, "until": in.Until} {
		vars[k] = nil
		if v != "" {
			vars[k] = v
		}
	}
	changes, c, err := collect(s, first, in.After, func(page, first int, after string) ([]edge, pageInfo, error) {
		vars["first"], vars["fresh"], vars["after"] = first, page == 0, nil
		if after != "" {
			vars["after"] = after
		}
		var d struct {
			Changes struct {
				Edges     []json.RawMessage
				PageInfo  pageInfo
				Revision  string
				Truncated bool
			}
			Resources *connection
		}
		if err := s.query(ctx, changesDocument(len(in.Fields)), vars, &d); err != nil {
			return nil, pageInfo{}, err
		}
		if page == 0 {
			// The later pages read up to where the first did.
			out.Revision, out.Incomplete = d.Changes.Revision, d.Changes.Truncated
			vars["until"] = d.Changes.Revision
			if r := d.Resources; r != nil {
				out.Freshness = Freshness{StaleClusters: r.Staleness, DeniedClusters: r.DeniedClusters}
			}
		}
		edges := make([]edge, len(d.Changes.Edges))
		for i, raw := range d.Changes.Edges {
			var ev struct{ Cursor string }
			if err := json.Unmarshal(raw, &ev); err != nil {
				return nil, pageInfo{}, fmt.Errorf("decode a change: %w", err)
			}
			edges[i] = edge{Cursor: ev.Cursor, Node: raw}
		}
		return edges, d.Changes.PageInfo, nil
	}, func(raw json.RawMessage) (Change, error) {
		var ev changeEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return Change{}, fmt.Errorf("decode a change: %w", err)
		}
		var rv struct{ ResourceVersion string }
		if err := json.Unmarshal(ev.Resource, &rv); err != nil {
			return Change{}, fmt.Errorf("decode a change's object: %w", err)
		}
		it, err := itemOf(ev.Resource, in.Fields)
		return Change{Type: ev.Type, Time: ev.Time, ResourceVersion: rv.ResourceVersion, Item: it}, err
	})
	if err != nil {
		return nil, ChangesOutput{}, err
	}
	out.Changes, out.Returned, out.NextCursor, out.Truncated = changes, len(changes), c.next, c.truncated
	if out.Changes == nil {
		out.Changes = []Change{}
	}
	out.Summary = changesSummary(out, order, s.opts.ResultBytes)
	return nil, out, nil
}
