// The client of client.ts with a typo in a field's name (imag): tsc must
// reject it, which is what generated types are for.
import type { TypedPodsQuery } from './generated';

export function firstImages(data: TypedPodsQuery): string[] {
  const out: string[] = [];
  for (const edge of data.pods.edges) {
    const image = edge.node.spec?.containers?.[0]?.imag;
    if (image != null) out.push(image);
  }
  return out;
}
