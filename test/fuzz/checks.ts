// What the fuzzer asserts about each answer and about the server afterwards.
import { status } from '@grpc/grpc-js';
import type { GetServerStatsResponse } from '../../gen/holdfast/v1/admin';
import { DEFAULT_LIMITS } from '../../src/transport/limits';
import type { TestClient } from '../support/client';
import type { Outcome } from './calls';
import type { Failure } from './run';
import type { Method } from './plans';

const { OK, INVALID_ARGUMENT, NOT_FOUND, FAILED_PRECONDITION, DEADLINE_EXCEEDED, ABORTED, CANCELLED, RESOURCE_EXHAUSTED, UNAVAILABLE } = status;

/**
 * The statuses each method may answer a fuzzed request with (README, "Errors"). Never INTERNAL or
 * UNKNOWN. UNAVAILABLE only as the server's own answer that Redis did not reply in time (its 1 s
 * command timeout, on a machine this loaded) or that it has not yet confirmed the master after a
 * reconnect, or on a connection the fuzzer cut; never a lost connection otherwise.
 */
export const ALLOWED: Record<Method, readonly status[]> = {
  acquire: [OK, INVALID_ARGUMENT, FAILED_PRECONDITION],
  release: [OK, INVALID_ARGUMENT, NOT_FOUND],
  renew: [OK, INVALID_ARGUMENT, NOT_FOUND],
  hold: [OK, INVALID_ARGUMENT, FAILED_PRECONDITION, DEADLINE_EXCEEDED, ABORTED],
  inspect: [OK, INVALID_ARGUMENT],
  checkFencingToken: [OK, INVALID_ARGUMENT],
  getServerStats: [OK, INVALID_ARGUMENT],
  // NOT_FOUND: no status for that service name.
  healthCheck: [OK, NOT_FOUND, INVALID_ARGUMENT],
};

/** How the server words UNAVAILABLE when Redis did not answer (src/engine/errors.ts). */
export const REDIS_UNAVAILABLE = 'Redis is unavailable';
/**
 * How it words UNAVAILABLE after its Redis connection came back, until it has checked that the
 * master is the one it wrote to (src/redis/failover-watch.ts): on a machine this loaded a command
 * timeout can drop the connection, and the server must not grant before it knows.
 */
const MASTER_UNCONFIRMED = /^lock ".*": the server has not yet confirmed which Redis master/s;

/** The server's own UNAVAILABLE for Redis trouble (a timeout, a master not yet confirmed). */
export function isRedisTrouble(details: string): boolean {
  return details.startsWith(REDIS_UNAVAILABLE) || MASTER_UNCONFIRMED.test(details);
}
const REDIS_CALLS = new Set<Method>(['acquire', 'release', 'renew', 'hold', 'inspect', 'checkFencingToken']);
/** Calls that wait: deadlock detection may end one ABORTED (docs/deadlocks.md), the fuzzer's owners taking random locks. */
const WAITING_CALLS = new Set<Method>(['acquire', 'hold']);
/** A wait ended to break a cycle of waits, not a lost lease. */
const isDeadlock = (outcome: Outcome) => outcome.code === ABORTED && outcome.details.startsWith('deadlock: ');

/** The server's default --max-message-bytes; a larger request is RESOURCE_EXHAUSTED before any handler. */
const MAX_MESSAGE_BYTES = DEFAULT_LIMITS.maxMessageBytes;

/** What is wrong with how a call ended, or undefined. `connectionCut`: the fuzzer cut its connection (UNAVAILABLE). */
export function checkOutcome(method: Method, outcome: Outcome, bodyBytes: number, connectionCut = false): string | undefined {
  const allowed = new Set<number>(ALLOWED[method]);
  if (connectionCut || (REDIS_CALLS.has(method) && isRedisTrouble(outcome.details))) allowed.add(UNAVAILABLE);
  if (outcome.cancelled) allowed.add(CANCELLED);
  if (outcome.deadline) allowed.add(DEADLINE_EXCEEDED);
  if (bodyBytes > MAX_MESSAGE_BYTES) allowed.add(RESOURCE_EXHAUSTED);
  if (WAITING_CALLS.has(method) && isDeadlock(outcome)) allowed.add(ABORTED);
  if (!allowed.has(outcome.code)) return `status ${status[outcome.code] ?? outcome.code} (${outcome.details}) is not one ${method} may answer`;
  if (method === 'hold') return checkHoldEvents(outcome);
  return undefined;
}

/** A Hold's events agree with how it ended (README, "Hold: the stream is the lease"). */
function checkHoldEvents(outcome: Outcome): string | undefined {
  const kinds = outcome.events.map((e) => (e.acquired ? 'acquired' : e.renewed ? 'renewed' : e.lost ? 'lost' : 'empty'));
  const acquired = kinds[0] === 'acquired';
  if (kinds.lastIndexOf('acquired') > 0) return `events ${kinds.join(',')}: acquired is not first and once`;
  if (kinds.includes('empty')) return `events ${kinds.join(',')}: an event with nothing set`;
  const lost = kinds.indexOf('lost');
  if (lost >= 0 && lost !== kinds.length - 1) return `events ${kinds.join(',')}: lost is not last`;
  if (outcome.cancelled || outcome.code === UNAVAILABLE) return undefined; // a cancel or a cut may end it at any point
  switch (outcome.code) {
    case OK:
      return acquired && lost < 0 ? undefined : `ended OK after ${kinds.join(',') || 'no events'}`;
    case ABORTED:
      if (isDeadlock(outcome)) return kinds.length === 0 ? undefined : `ended ABORTED for a deadlock after ${kinds.join(',')}`;
      return acquired && lost > 0 ? undefined : `ended ABORTED after ${kinds.join(',') || 'no events'}`;
    case DEADLINE_EXCEEDED:
      return outcome.deadline || !acquired ? undefined : `ended DEADLINE_EXCEEDED after acquired with no deadline`;
    default:
      return kinds.length === 0 ? undefined : `ended ${status[outcome.code]} after ${kinds.join(',')}`;
  }
}

/** The fields of GetServerStats that differ between two readings, as "field: before -> now". */
export function statsDiff(baseline: GetServerStatsResponse, now: GetServerStatsResponse): string[] {
  return (Object.keys(baseline) as (keyof GetServerStatsResponse)[]).filter((k) => baseline[k] !== now[k]).map((k) => `${k}: ${baseline[k]} -> ${now[k]}`);
}

/** Names among `names` that still have holders or waiters, with what Inspect says of them. */
export async function leftoverLocks(client: TestClient, names: string[], concurrency = 32): Promise<string[]> {
  const left: string[] = [];
  for (let i = 0; i < names.length; i += concurrency) {
    const infos = await Promise.all(names.slice(i, i + concurrency).map((name) => client.inspect({ name })));
    for (const info of infos) {
      if (info.holders.length > 0 || info.waiters > 0) left.push(`${info.name}: ${JSON.stringify({ holders: info.holders, waiters: info.waiters })}`);
    }
  }
  return left;
}

/** Failures grouped by what went wrong (numbers left out), with how many, body sizes, times and connections. */
export function summarize(failures: Failure[]): Record<string, { count: number; bytes: string; at: string; conns: string[] }> {
  const groups: Record<string, { count: number; bytes: number[]; at: number[]; conns: Set<string> }> = {};
  for (const f of failures) {
    const key = `${f.method}/${f.family}: ${f.what.replace(/\d+(\.\d+)?/g, 'N')}`;
    const group = (groups[key] ??= { count: 0, bytes: [], at: [], conns: new Set() });
    group.count++;
    group.bytes.push(Number(f.body.split(' ')[0]));
    group.at.push(f.at);
    group.conns.add(f.conn);
  }
  const range = (xs: number[]) => `${Math.min(...xs)} .. ${Math.max(...xs)}`;
  return Object.fromEntries(
    Object.entries(groups).map(([k, g]) => [k, { count: g.count, bytes: range(g.bytes), at: `${range(g.at)} s`, conns: [...g.conns] }]),
  );
}
