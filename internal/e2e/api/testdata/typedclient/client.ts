// A portal's use of the types GraphQL Code Generator made from fleetcache's
// typed schema (generated.ts): tsc --noEmit must accept it.
import type { TypedPodsQuery, PodsAmongResourcesQuery } from './generated';

// IsAny is true for any: a field typed any would compile whatever the
// client reads from it, so the reads below assert they are not.
type IsAny<T> = 0 extends 1 & T ? true : false;

// firstImages reads pod.spec.containers[0].image of each Pod, a string.
export function firstImages(data: TypedPodsQuery): string[] {
  const out: string[] = [];
  for (const edge of data.pods.edges) {
    const pod = edge.node;
    const image = pod.spec?.containers?.[0]?.image;
    const typed: IsAny<typeof image> = false;
    void typed;
    if (image != null) {
      const s: string = image;
      out.push(`${pod.cluster}/${pod.name}: ${s.toLowerCase()}`);
    }
  }
  return out;
}

// podImages reads the same through resources, where only Pods have spec.
export function podImages(data: PodsAmongResourcesQuery): string[] {
  const out: string[] = [];
  for (const edge of data.resources.edges) {
    const node = edge.node;
    if (node.__typename === 'Pod') {
      for (const c of node.spec?.containers ?? []) {
        if (c.image != null) out.push(c.image);
      }
    }
  }
  return out;
}

// restarts sums the restart counts of a Pod's containers: numbers.
export function restarts(data: TypedPodsQuery): number {
  let n = 0;
  for (const edge of data.pods.edges) {
    for (const s of edge.node.status?.containerStatuses ?? []) {
      n += s.restartCount ?? 0;
    }
  }
  return n;
}
