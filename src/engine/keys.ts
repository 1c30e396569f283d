// The only place that builds Redis keys. Every key of one lock shares one hash tag, so every
// script on that lock touches one Redis Cluster slot.

export interface LockKeys {
  holders: string;
  queue: string;
  data: string;
  channel: string;
}

// Names may contain '{' and '}', which would cut the hash tag short: percent-encode them.
function tagOf(name: string): string {
  return name.replace(/[%{}]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function untag(tag: string): string {
  return tag.replace(/%(25|7B|7D)/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

/** Escapes Redis glob characters (SCAN MATCH). */
function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}

/** A SCAN MATCH pattern for the holder and queue keys of the locks whose names start with `namePrefix`. */
export function lockScanPattern(prefix: string, namePrefix = ''): string {
  return `${globEscape(prefix)}:{${globEscape(tagOf(namePrefix))}*}:[hq]`;
}

/** The lock a holder or queue key belongs to (as lockScanPattern matches them), or null for any other key. */
export function lockNameOfKey(prefix: string, key: string): string | null {
  const head = `${prefix}:{`;
  if (!key.startsWith(head) || !/\}:[hq]$/.test(key)) return null;
  const tag = key.slice(head.length, -3);
  return tag.includes('}') ? null : untag(tag);
}

export function lockKeys(prefix: string, name: string): LockKeys {
  const base = `${prefix}:{${tagOf(name)}}`;
  return { holders: `${base}:h`, queue: `${base}:q`, data: `${base}:d`, channel: `${base}:c` };
}

/** A lock's keys on each Redlock node (src/redlock): its vote, its highest fencing token, its wake-up channel, its last released token. */
export interface RedlockKeys {
  lease: string;
  fence: string;
  channel: string;
  released: string;
}

export function redlockKeys(prefix: string, name: string): RedlockKeys {
  const base = `${prefix}:{${tagOf(name)}}`;
  return { lease: `${base}:rl`, fence: `${base}:rf`, channel: `${base}:rc`, released: `${base}:rr` };
}

/** Where a request id is tied to the request it was first used for: its own slot, since it spans locks. */
export function requestIdKey(prefix: string, requestId: string): string {
  return `${prefix}:rid:{${tagOf(requestId)}}`;
}

/** An owner's wait records (deadlock detection): its own slot, since an owner waits on locks anywhere. */
export function waitsKey(prefix: string, owner: string): string {
  return `${prefix}:wf:{${tagOf(owner)}}`;
}

/** The failover epoch record: the master grants were last made under (see src/redis/failover-watch.ts). */
export function epochKey(prefix: string): string {
  return `${prefix}:epoch`;
}

/** A Cluster shard's epoch record, in the slot of `tag` (one the shard's master serves). */
export function shardEpochKey(prefix: string, tag: string): string {
  return `${prefix}:epoch:{${tag}}`;
}

/** The namespace servers without authentication use: its keys are the prefix's own, as before namespaces. */
export const DEFAULT_NAMESPACE = 'default';

/**
 * A namespace's own key prefix. Every other key starts `<prefix>:{`, `<prefix>:rid:`, `<prefix>:wf:` or
 * `<prefix>:epoch`, so no namespace's key can be the default namespace's or another's.
 */
export function namespacePrefix(prefix: string, namespace: string): string {
  return namespace === DEFAULT_NAMESPACE ? prefix : `${prefix}:ns:${namespace}`;
}

/** The keys a script takes, in the order its header lists them. */
export function scriptKeys(keys: LockKeys, count: number): string[] {
  return [keys.holders, keys.queue, keys.data, keys.channel].slice(0, count);
}
