// Checks wire requests and turns them into engine parameters. Every message names the proto
// field at fault. Nothing invalid reaches the engine or Redis.
import {
  LockMode,
  type AcquireRequest,
  type AcquireSetRequest,
  type HoldRequest,
  type HoldSetRequest,
  type ReleaseSetRequest,
} from '../../gen/holdfast/v1/lock';
import { MAX_HOLD_MS, MAX_TTL_MS, MAX_WAIT_MS, MIN_TTL_MS } from '../config/bounds';
import { LockError } from '../engine/errors';
import { Mode, type AcquireParams } from '../engine/types';

export const MAX_NAME_BYTES = 512;
/** A holder's published value is read by every watcher on every change: small, like an address. */
export const MAX_VALUE_BYTES = 1024;
const MAX_ID_BYTES = 512;
const MAX_TOKEN_LENGTH = 128;
// biome-ignore lint/suspicious/noControlCharactersInRegex: it finds C0 and C1 control characters and DEL on purpose
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

function invalid(message: string): LockError {
  return new LockError('invalid', message);
}

export function checkName(name: string): string {
  if (name.length === 0) throw invalid('name is required');
  const bytes = Buffer.byteLength(name, 'utf8');
  if (bytes > MAX_NAME_BYTES) throw invalid(`name is ${bytes} bytes; at most ${MAX_NAME_BYTES} are allowed`);
  if (CONTROL.test(name)) throw invalid('name must not contain control characters');
  return name;
}

function checkId(field: string, value: string): string {
  const bytes = Buffer.byteLength(value, 'utf8');
  if (bytes > MAX_ID_BYTES) throw invalid(`${field} is ${bytes} bytes; at most ${MAX_ID_BYTES} are allowed`);
  if (CONTROL.test(value)) throw invalid(`${field} must not contain control characters`);
  return value;
}

/** A hold id is the server's own 12-character name for a Hold stream's hold; '' for none. */
export function checkHoldId(holdId: string): string {
  if (holdId !== '' && !/^[A-Za-z0-9_-]{12}$/.test(holdId)) throw invalid('hold_id is not a holdfast hold id (use HoldAcquired.hold_id, or leave it empty)');
  return holdId;
}

/**
 * A request id unlocks the token of the grant it made, so a short one would be a guessable key:
 * this length rules out counters and "req-1", though not every poor choice.
 */
export const MIN_REQUEST_ID_BYTES = 16;

function checkRequestId(requestId: string): string {
  checkId('request_id', requestId);
  const bytes = Buffer.byteLength(requestId, 'utf8');
  if (bytes > 0 && bytes < MIN_REQUEST_ID_BYTES) {
    throw invalid(`request_id is ${bytes} bytes; use at least ${MIN_REQUEST_ID_BYTES} unguessable bytes (for example a random UUID), or none`);
  }
  return requestId;
}

export function checkValue(value: string): string {
  const bytes = Buffer.byteLength(value, 'utf8');
  if (bytes > MAX_VALUE_BYTES) throw invalid(`value is ${bytes} bytes; at most ${MAX_VALUE_BYTES} are allowed`);
  return value;
}

export function checkToken(token: string): string {
  if (token.length === 0) throw invalid('token is required');
  if (token.length > MAX_TOKEN_LENGTH || CONTROL.test(token)) throw invalid('token is not a holdfast token');
  return token;
}

/** int64 fields arrive as decimal strings; checks the range before anything turns them into numbers. */
export function checkMillis(field: string, value: string, min: number, max: number, zeroMeans?: string): number {
  const ms = BigInt(value || '0');
  if (ms === 0n && zeroMeans !== undefined) return 0;
  if (ms < BigInt(min) || ms > BigInt(max)) {
    const zero = zeroMeans ? ` (or 0 for ${zeroMeans})` : '';
    throw invalid(`${field} must be between ${min} and ${max}${zero}; got ${value}`);
  }
  return Number(ms);
}

export function checkTtl(value: string, defaultTtlMs: number, zeroMeans = `the server default ${defaultTtlMs}`): number {
  return checkMillis('ttl_ms', value, MIN_TTL_MS, MAX_TTL_MS, zeroMeans) || defaultTtlMs;
}

/** A Hold's max_hold_ms (0: the server's cap). */
export function checkMaxHold(value: string): number {
  return checkMillis('max_hold_ms', value, 1, MAX_HOLD_MS, 'the server cap');
}

function checkMode(mode: LockMode): Mode {
  if (mode === LockMode.LOCK_MODE_UNSPECIFIED || mode === LockMode.LOCK_MODE_EXCLUSIVE) return Mode.EXCLUSIVE;
  if (mode === LockMode.LOCK_MODE_SHARED) return Mode.SHARED;
  throw invalid(`mode ${mode} is not a LockMode (use LOCK_MODE_EXCLUSIVE or LOCK_MODE_SHARED)`);
}

function checkLimit(limit: number, mode: Mode): number {
  if (limit > 1 && mode === Mode.SHARED) {
    throw invalid(`limit ${limit} cannot be combined with mode LOCK_MODE_SHARED: a semaphore's permits are not shared locks`);
  }
  return Math.max(1, limit);
}

export function toAcquireParams(request: AcquireRequest | HoldRequest, defaultTtlMs: number): AcquireParams {
  const mode = checkMode(request.mode);
  return {
    name: checkName(request.name),
    owner: checkId('owner', request.owner),
    ttlMs: checkTtl(request.ttlMs, defaultTtlMs),
    waitMs: checkMillis('wait_timeout_ms', request.waitTimeoutMs, 0, MAX_WAIT_MS),
    mode,
    limit: checkLimit(request.limit, mode),
    requestId: 'requestId' in request ? checkRequestId(request.requestId) : '',
    holdId: '',
    value: checkValue(request.value),
  };
}

export function checkFencingToken(value: string): string {
  if (!/^\d+$/.test(value) || BigInt(value) === 0n) throw invalid('fencing_token is required');
  return BigInt(value).toString();
}

/** Members of one AcquireSet or HoldSet: each is a script and a round trip, taken one after another. */
export const MAX_SET_NAMES = 64;

/** A set request's names (checked, distinct) and the parameters every member is taken with. */
export function toSetParams(request: AcquireSetRequest | HoldSetRequest, defaultTtlMs: number) {
  if (request.names.length === 0) throw invalid('names is required: at least one lock name');
  if (request.names.length > MAX_SET_NAMES) throw invalid(`names has ${request.names.length} entries; at most ${MAX_SET_NAMES} are allowed`);
  const names = request.names.map((name, i) => {
    try {
      return checkName(name);
    } catch (err) {
      throw invalid(`names[${i}]: ${(err as Error).message}`);
    }
  });
  const twice = names.find((name, i) => names.indexOf(name) !== i);
  if (twice !== undefined) throw invalid(`names lists "${twice}" twice`);
  const { name: _, holdId: __, ...params } = toAcquireParams({ ...request, name: names[0], limit: 0, requestId: '' } as AcquireRequest, defaultTtlMs);
  return { names, params };
}

/** A ReleaseSet's members, each checked: the lock, the token, and the hold to give back. */
export function toReleaseSetMembers(request: ReleaseSetRequest) {
  if (request.members.length === 0) throw invalid('members is required: at least one name and token');
  if (request.members.length > MAX_SET_NAMES) throw invalid(`members has ${request.members.length} entries; at most ${MAX_SET_NAMES} are allowed`);
  return request.members.map((m, i) => {
    try {
      return { name: checkName(m.name), grant: { token: checkToken(m.token) }, holdId: checkHoldId(m.holdId) };
    } catch (err) {
      throw invalid(`members[${i}]: ${(err as Error).message}`);
    }
  });
}
