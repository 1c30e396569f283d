// The comparable form of one lock's state: the three keys as read from Redis, decoded, and the
// reference model's state (model.ts) projected the same way. lua-model.test.ts compares the two.
import type { LockState } from './model';

export interface Snapshot {
  holders: Record<string, { expiry: number; grant: unknown }>;
  /** Grant records with no holders entry (never expected). */
  strayGrants: string[];
  queue: { id: string; seq: number }[];
  waiters: Record<string, unknown>;
  owners: Record<string, string>;
  requests: Record<string, unknown>;
  fence: string | null;
  limit: number | null;
  seq: number | null;
}

export function snapshotOf(state: LockState): Snapshot {
  const holders: Snapshot['holders'] = {};
  for (const [token, g] of state.grants) {
    holders[token] = {
      expiry: g.expiry,
      grant: {
        o: g.owner,
        f: g.fence,
        x: g.exclusive,
        s: g.shared,
        t: g.leaseMs,
        r: [...g.rids],
        a: g.abandoned ? 1 : 0,
        h: g.holds.map((h) => `${h.mode}${h.id}`),
        k: g.keepUntil,
        km: g.vanishedMode,
      },
    };
  }
  const waiters: Snapshot['waiters'] = {};
  for (const [id, w] of state.waiters) {
    waiters[id] = {
      o: w.owner,
      m: w.mode,
      l: w.limit,
      t: w.ttl,
      r: w.rid,
      h: w.holdId,
      k: w.token,
      e: w.entryExpiry,
      wl: w.entryLease,
      g: w.state,
      d: w.message,
      q: w.queuedAt,
    };
  }
  const requests: Snapshot['requests'] = {};
  for (const [rid, r] of state.requests) requests[rid] = { k: r.token, o: r.owner, m: r.mode, l: r.limit, t: r.ttl };
  return {
    holders,
    strayGrants: [],
    queue: state.queue.map((e) => ({ ...e })),
    waiters,
    owners: Object.fromEntries(state.owners),
    requests,
    fence: state.fence,
    limit: state.limit,
    seq: state.seq,
  };
}

/** Decodes the three keys as read from Redis (ZRANGE … WITHSCORES flat lists, HGETALL object). */
export function snapshotOfRedis(holdersFlat: string[], queueFlat: string[], data: Record<string, string>): Snapshot {
  const list = (v: unknown) => (Array.isArray(v) ? v : []); // cjson writes an empty list as {}
  const snap: Snapshot = { holders: {}, strayGrants: [], queue: [], waiters: {}, owners: {}, requests: {}, fence: null, limit: null, seq: null };
  for (let i = 0; i < holdersFlat.length; i += 2) {
    const raw = data[`g:${holdersFlat[i]}`];
    let grant: unknown = null;
    if (raw) {
      const g = JSON.parse(raw);
      grant = { o: g.o, f: g.f, x: g.x, s: g.s, t: g.t, r: list(g.r), a: g.a, h: list(g.h), k: g.k ?? 0, km: g.km ?? 0 };
    }
    snap.holders[holdersFlat[i]] = { expiry: Number(holdersFlat[i + 1]), grant };
  }
  for (let i = 0; i < queueFlat.length; i += 2) snap.queue.push({ id: queueFlat[i], seq: Number(queueFlat[i + 1]) });
  for (const [field, value] of Object.entries(data)) {
    const [kind, ...rest] = field.split(':');
    const key = rest.join(':');
    if (kind === 'g' && !(key in snap.holders)) snap.strayGrants.push(key);
    else if (kind === 'w') {
      const w = JSON.parse(value);
      snap.waiters[key] = { o: w.o, m: w.m, l: w.l, t: w.t, r: w.r, h: w.h, k: w.k, e: w.e, wl: w.wl, g: w.g, d: w.d, q: w.q };
    } else if (kind === 'o') snap.owners[key] = value;
    else if (kind === 'r') {
      const r = JSON.parse(value);
      snap.requests[key] = { k: r.k, o: r.o, m: r.m, l: r.l, t: r.t };
    } else if (field === 'fence') snap.fence = value;
    else if (field === 'limit') snap.limit = Number(value);
    else if (field === 'seq') snap.seq = Number(value);
  }
  return snap;
}
