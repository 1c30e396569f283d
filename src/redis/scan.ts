// One bounded SCAN step (never KEYS) over whatever topology the engine talks to. A Cluster keeps
// its keys on several masters: the cursor then names the master (by its place in the sorted list
// of masters) and that master's own cursor, so one listing walks them one after the other.
import { Cluster, type Redis } from 'ioredis';

export interface ScanStep {
  keys: string[];
  /** Where to go on from; '0' when the walk is complete. */
  cursor: string;
}

/** One SCAN call from `cursor` ('0' to start) for keys matching `pattern`, asking for about `count`. */
export async function scanStep(redis: Redis | Cluster, cursor: string, pattern: string, count: number): Promise<ScanStep> {
  if (!(redis instanceof Cluster)) {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', count);
    return { keys, cursor: next };
  }
  const masters = redis.nodes('master').sort((a, b) => nodeName(a).localeCompare(nodeName(b)));
  const [index, nodeCursor] = parseClusterCursor(cursor);
  const node = masters[index];
  if (!node) return { keys: [], cursor: '0' }; // the masters changed under a walk: it ends here
  const [next, keys] = await node.scan(nodeCursor, 'MATCH', pattern, 'COUNT', count);
  if (next !== '0') return { keys, cursor: `${index}-${next}` };
  return { keys, cursor: index + 1 < masters.length ? `${index + 1}-0` : '0' };
}

function nodeName(node: Redis): string {
  return `${node.options.host}:${node.options.port}`;
}

function parseClusterCursor(cursor: string): [number, string] {
  const match = /^(\d+)-(\d+)$/.exec(cursor);
  return match ? [Number(match[1]), match[2]] : [0, '0'];
}
