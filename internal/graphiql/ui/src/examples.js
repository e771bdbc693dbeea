// Example operations shown as GraphiQL's first tabs, written for the fleet
// that `make demo` seeds (docs/demo.md) but valid on any fleet.
export const examples = [
  {
    query: `# Welcome to fleetcache's GraphiQL.
# Ctrl-Space completes, Ctrl-Enter runs; the Explorer (left) builds queries.
# The other tabs hold examples for the demo fleet (make demo).

# How fresh each cluster's cached objects are, per resource type.
query Clusters {
  clusters {
    name
    status
    currentAsOf
    objectCount
    resources { resource status objectCount lastError }
  }
}
`,
  },
  {
    query: `# Pods per cluster, and by tier in production.
query PodsPerCluster {
  byCluster: facets(by: CLUSTER, filter: {kinds: ["Pod"]}) { value count }
  byTier: facets(by: LABEL, labelKey: "tier", filter: {kinds: ["Pod"], labelSelector: "env=production"}) { value count }
}
`,
  },
  {
    query: `# A Deployment, its ReplicaSets and their Pods, through owner references.
query DeploymentTree($cluster: String!, $namespace: String!, $name: String!) {
  resource(cluster: $cluster, kind: "Deployment.apps", namespace: $namespace, name: $name) {
    name
    children {
      kind name labels
      children { kind name }
    }
  }
}
`,
    variables: '{ "cluster": "prod-eu", "namespace": "payments", "name": "api" }',
  },
  {
    query: `# What changed in the last 15 minutes, newest first: from the changes
# fleetcache retains (docs/graphql.md, "What changed").
query WhatChanged {
  changes(since: "15m", order: DESC, first: 50, filter: {kinds: ["Pod", "Widget"]}) {
    edges { type time resource { cluster kind namespace name } }
    pageInfo { hasNextPage endCursor }
    truncated
  }
}
`,
  },
  {
    query: `# Live: every change of a Widget or ConfigMap as it happens (over
# graphql-ws). Press Run, then watch the result pane; the demo changes
# something every second. Stop it with the same button.
subscription Churn {
  resourceEvents(filter: {kinds: ["Widget", "ConfigMap"]}) {
    type
    resource { cluster namespace name labels }
  }
}
`,
  },
  {
    query: `# Live: each change of a cluster's sync status.
subscription Health {
  clusterHealth { name status message currentAsOf }
}
`,
  },
];
