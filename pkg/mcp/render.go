package mcp

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// The summary lines: one sentence or a few that a model can act on without
// reading the rest of the answer.

// listSummary summarizes a list: how many matched, how many came back,
// why it stopped, which clusters are stale, how to continue.
func listSummary(what string, l listed, returned, budget int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s match", count(l.total), what)
	switch {
	case l.total == 0:
		b.WriteString(".")
	case returned == l.total:
		fmt.Fprintf(&b, "; all %s returned.", count(returned))
	case l.truncated:
		fmt.Fprintf(&b, "; %s returned here (cut at the %s size budget).", count(returned), bytesText(budget))
	default:
		fmt.Fprintf(&b, "; %s returned here.", count(returned))
	}
	if l.next != "" {
		b.WriteString(" More: call again with after set to nextCursor.")
	}
	b.WriteString(freshnessText(l.fresh))
	return b.String()
}

// freshnessText is what a summary says of stale and denied clusters.
func freshnessText(f Freshness) string {
	var b strings.Builder
	if len(f.StaleClusters) > 0 {
		parts := make([]string, len(f.StaleClusters))
		for i, s := range f.StaleClusters {
			parts[i] = staleText(s)
		}
		fmt.Fprintf(&b, " Stale clusters (their objects are the last known state; cluster_health says why): %s.", strings.Join(parts, ", "))
	}
	if len(f.DeniedClusters) > 0 {
		fmt.Fprintf(&b, " Left out, as your access there could not be checked: %s.", strings.Join(f.DeniedClusters, ", "))
	}
	return b.String()
}

// staleText names a stale cluster, its status and since when.
func staleText(s Stale) string {
	if s.CurrentAsOf == "" {
		return fmt.Sprintf("%s (%s, never current yet)", s.Cluster, s.Status)
	}
	return fmt.Sprintf("%s (%s, current as of %s)", s.Cluster, s.Status, s.CurrentAsOf)
}

// getSummary summarizes get_resource's answer.
func getSummary(o GetOutput, budget int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", o.Kind, o.Name)
	if o.Namespace != "" {
		fmt.Fprintf(&b, " in namespace %s", o.Namespace)
	}
	fmt.Fprintf(&b, " of cluster %s, %s bytes of %s.", o.Cluster, count(o.Bytes), strings.ToUpper(string(o.Format)))
	if o.Truncated {
		fmt.Fprintf(&b, " Cut at the %s size budget: read parts with find_resources (nameContains and fields).", bytesText(budget))
	}
	if o.Stale != nil {
		fmt.Fprintf(&b, " The cluster is stale: %s.", staleText(*o.Stale))
	}
	return b.String()
}

// countSummary summarizes count_resources' answer.
func countSummary(in CountInput, o CountOutput) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s objects match.", count(o.TotalCount))
	if in.GroupBy != "" {
		by := strings.ToLower(string(in.GroupBy))
		switch in.GroupBy {
		case "LABEL", "CLUSTER_LABEL":
			by += " " + in.LabelKey
		case "FIELD":
			by = in.Field
		}
		parts := make([]string, 0, min(len(o.Groups), 5))
		for _, g := range o.Groups[:min(len(o.Groups), 5)] {
			parts = append(parts, fmt.Sprintf("%s %s", quoteEmpty(g.Value), count(g.Count)))
		}
		fmt.Fprintf(&b, " By %s: %s", by, strings.Join(parts, ", "))
		if more := len(o.Groups) - len(parts) + o.MoreGroups; more > 0 {
			fmt.Fprintf(&b, " and %s more values", count(more))
		}
		b.WriteString(".")
	}
	b.WriteString(freshnessText(o.Freshness))
	return b.String()
}

// changesSummary summarizes what_changed's answer: how many changes came
// back, of which types, over which span, where most happened, whether
// the history is complete, how to continue.
func changesSummary(o ChangesOutput, order Order, budget int) string {
	var b strings.Builder
	switch {
	case o.Returned == 0:
		b.WriteString("No changes match")
		switch _, err := time.Parse(time.RFC3339Nano, o.Since); {
		case o.Since == "":
			b.WriteString(" in the changes fleetcache retains")
		case err == nil:
			fmt.Fprintf(&b, " since %s", o.Since)
		default:
			b.WriteString(" since that revision")
		}
		b.WriteString(".")
	default:
		what := "changes"
		if o.Returned == 1 {
			what = "change"
		}
		newest := "newest first"
		if order == "ASC" {
			newest = "oldest first"
		}
		fmt.Fprintf(&b, "%s %s returned, %s", count(o.Returned), what, newest)
		if o.Truncated {
			fmt.Fprintf(&b, " (cut at the %s size budget)", bytesText(budget))
		}
		byType, byCluster, byKind, byNamespace := map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}
		var from, to string
		for _, c := range o.Changes {
			byType[c.Type]++
			byCluster[c.Cluster]++
			byKind[c.Kind]++
			byNamespace[quoteEmpty(c.Namespace)]++
			if c.Time != "" && (from == "" || c.Time < from) {
				from = c.Time
			}
			to = max(to, c.Time)
		}
		if from != "" {
			fmt.Fprintf(&b, ", recorded from %s to %s", from, to)
		}
		var types []string
		for _, t := range []string{"ADDED", "MODIFIED", "DELETED"} {
			if n := byType[t]; n > 0 {
				types = append(types, fmt.Sprintf("%s %s", count(n), t))
			}
		}
		fmt.Fprintf(&b, ": %s. By cluster: %s; kind: %s; namespace: %s.", strings.Join(types, ", "),
			topValues(byCluster), topValues(byKind), topValues(byNamespace))
	}
	if o.NextCursor != "" {
		b.WriteString(" More: call again with after set to nextCursor, with the same filter, since, until and order.")
	}
	if o.Incomplete {
		b.WriteString(" The range starts before the oldest change fleetcache retains (it keeps a bounded history, since it started): earlier changes are not known.")
	}
	b.WriteString(freshnessText(o.Freshness))
	return b.String()
}

// topValues writes the three values counted most, highest first, and how
// many other values there are.
func topValues(counts map[string]int) string {
	values := make([]string, 0, len(counts))
	for v := range counts {
		values = append(values, v)
	}
	slices.SortFunc(values, func(a, b string) int { return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(a, b)) })
	const shown = 3
	parts := make([]string, 0, shown)
	for _, v := range values[:min(len(values), shown)] {
		parts = append(parts, fmt.Sprintf("%s %s", v, count(counts[v])))
	}
	if more := len(values) - len(parts); more > 0 {
		parts = append(parts, fmt.Sprintf("%s more", count(more)))
	}
	return strings.Join(parts, ", ")
}

// quoteEmpty shows the empty value (cluster-scoped objects' namespace) as "".
func quoteEmpty(v string) string {
	if v == "" {
		return `""`
	}
	return v
}

// healthSummary summarizes cluster_health's answer over all the clusters
// asked about.
func healthSummary(all []ClusterHealth, o HealthOutput) string {
	byStatus := map[string]int{}
	var notCurrent []string
	for _, c := range all {
		byStatus[c.Status]++
		if c.Status != "SYNCED" {
			why := c.Message
			if why == "" && len(c.Problems) > 0 {
				why = c.Problems[0].LastError
			}
			if why != "" {
				why = ": " + why
			}
			notCurrent = append(notCurrent, fmt.Sprintf("%s %s%s", c.Name, c.Status, why))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s clusters", count(len(all)))
	var parts []string
	for _, s := range []string{"SYNCED", "SYNCING", "PENDING", "DEGRADED", "DISCONNECTED"} {
		if n := byStatus[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(&b, ": %s", strings.Join(parts, ", "))
	}
	b.WriteString(".")
	if len(notCurrent) > 0 {
		const shown = 5
		fmt.Fprintf(&b, " Not current: %s", strings.Join(notCurrent[:min(len(notCurrent), shown)], "; "))
		if len(notCurrent) > shown {
			fmt.Fprintf(&b, "; and %d more", len(notCurrent)-shown)
		}
		b.WriteString(".")
	}
	if o.Omitted > 0 {
		fmt.Fprintf(&b, " %d clusters left out by the size budget: ask for one cluster, a selector or problemsOnly.", o.Omitted)
	}
	return b.String()
}

// selected is how an error names a selector, if any.
func selected(selector string) string {
	if selector == "" {
		return ""
	}
	return fmt.Sprintf(" among the clusters that %q selects", selector)
}

// renderTables writes tables as kubectl get prints them: upper-case
// headers, columns aligned with three spaces between them, a blank line
// and the kind before each table.
func renderTables(ts []Table) string {
	var b strings.Builder
	for i, t := range ts {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "# %s\n", t.Kind)
		w := tabwriter.NewWriter(&b, 0, 8, 3, ' ', 0)
		fmt.Fprintln(w, strings.Join(t.Columns, "\t"))
		for _, r := range t.Rows {
			cells := make([]string, len(r))
			for j, c := range r {
				cells[j] = strings.NewReplacer("\t", " ", "\n", " ").Replace(c)
			}
			fmt.Fprintln(w, strings.Join(cells, "\t"))
		}
		_ = w.Flush() // writes to a strings.Builder
	}
	return b.String()
}

// count writes n with thousands separators: 100,000.
func count(n int) string { return english.Sprintf("%d", n) }

// english formats numbers as the summaries write them.
var english = message.NewPrinter(language.English)

// bytesText writes a size: 32 KiB, 1,000 bytes.
func bytesText(n int) string {
	if n >= 1024 && n%1024 == 0 {
		return count(n/1024) + " KiB"
	}
	return count(n) + " bytes"
}
