// A chaos client process. Runs `loops` concurrent loops; each takes a lock through the TypeScript
// SDK (clients/ts/dist/clients/ts), over a Session stream or a call each (config.transport), hold or acquire with a wait, does its critical section against the
// storage service with the grant's fencing token, and gives the lock back. Everything it learns
// goes to its log with a monotonic time; the orchestrator hears where each loop is (waiting,
// holding) so it can strike while a lock is held or awaited.
import { openSync, writeSync } from 'node:fs';
import { Agent, request } from 'node:http';
import type * as Sdk from '../../clients/ts/index';
import { monoNow, perfToMono } from './clock';
import type { FromWorker, Kind, LockSpec, StorageOp, StorageReply, StorageRequest, ToWorker, WorkerConfig, WorkerEvent } from './events';
import { SDK } from './paths';
import { Random } from './random';

const sdk = require(SDK) as typeof Sdk;
const config = JSON.parse(process.argv[2]) as WorkerConfig;
const logFd = openSync(config.logFile, 'a');
const random = new Random(config.seed);
/** A wait the server never ends is abandoned this long after its own timeout (and counted as hung). */
const ABANDON_AFTER_MS = 20_000;
const STORAGE_TIMEOUT_MS = 3_000;

const clients = config.addrs.map(
  (addr) =>
    new sdk.HoldfastClient(addr, {
      callTimeoutMs: 3_000,
      transport: config.transport,
      // A restarted server should be found again within a second, not after grpc-js's 2-minute backoff cap.
      channelOptions: { 'grpc.initial_reconnect_backoff_ms': 100, 'grpc.max_reconnect_backoff_ms': 1_000 },
    }),
);
const agent = new Agent({ keepAlive: true, maxSockets: config.loops + 1 });
let stopping = false;

function record(event: WorkerEvent): void {
  writeSync(logFd, `${JSON.stringify(event)}\n`);
}

function tell(message: FromWorker): void {
  try {
    process.send?.(message);
  } catch {
    // the orchestrator is gone; 'disconnect' ends this process
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Plan {
  lock: LockSpec;
  kind: Kind;
  api: 'hold' | 'acquire';
  waitMs: number;
  server: number;
  /** Pause after each storage round, ms. */
  thinks: number[];
}

function plan(): Plan {
  const lock = random.pick(config.locks);
  const kind: Kind = lock.type === 'exclusive' ? 'exclusive' : lock.type === 'semaphore' ? 'semaphore' : random.chance(0.35) ? 'writer' : 'reader';
  const api = random.chance(0.7) ? 'hold' : 'acquire';
  const ttl = config.ttlMs;
  const scale = config.thinkScaleMs;
  // A Hold's critical section may outlast a few renewals, and some (one in ten by default) run
  // for a few leases (a leader, a long job); an Acquire's is short, nothing renews it.
  const long = api === 'hold' && random.chance(config.longShare);
  const thinks =
    api === 'hold'
      ? Array.from({ length: random.int(1, 3) }, () => (long ? random.int(scale / 2, scale) : random.int(10, scale / 4)))
      : [random.int(10, Math.min(scale, ttl) / 5)];
  return { lock, kind, api, waitMs: random.int(ttl, 3 * ttl), server: random.int(0, clients.length - 1), thinks };
}

/** A grant in use: its token, whether the SDK still counts on it, and how to give it back. */
interface Held {
  token: string;
  valid(): boolean;
  release(): Promise<void>;
}

/** The SDK's conservative lease end on the monotonic clock. */
function sdkDeadline(grant: Sdk.Lease | Sdk.Lock): number {
  // The exact performance.now() deadline the SDK keeps; expiresAt is the same moment in epoch ms,
  // which is off by up to a millisecond once converted back (Date.now() counts whole ms).
  const kept = (grant as unknown as { deadline?: unknown }).deadline;
  if (typeof kept === 'number') return perfToMono(kept);
  return monoNow() + (grant.expiresAt - Date.now());
}

function refusal(op: string, err: unknown, abandoned: boolean): WorkerEvent {
  const detail = err instanceof Error ? err.message : String(err);
  const why = abandoned ? 'abandoned' : err instanceof sdk.NotAcquiredError ? 'timeout' : err instanceof sdk.LeaseLostError ? 'late' : 'error';
  return { e: 'refused', op, t: monoNow(), why, detail: detail.slice(0, 200) };
}

function lockOptions(op: string, p: Plan) {
  const limit = p.lock.type === 'semaphore' ? p.lock.limit : undefined;
  return { ttlMs: config.ttlMs, waitMs: p.waitMs, owner: op, shared: p.kind === 'reader', limit };
}

async function holdLease(op: string, p: Plan): Promise<Held | undefined> {
  const give = AbortSignal.timeout(p.waitMs + ABANDON_AFTER_MS);
  let lease: Sdk.Lease;
  try {
    lease = await clients[p.server].hold(p.lock.name, { ...lockOptions(op, p), signal: give });
  } catch (err) {
    record(refusal(op, err, give.aborted));
    return undefined;
  }
  let deadline = sdkDeadline(lease);
  record({ e: 'grant', op, token: lease.fencingToken.toString(), t: monoNow(), deadline });
  // Hear of every renewal the moment the SDK does: the deadline it moves is the lease window's end.
  const onEvent = lease.onEvent.bind(lease);
  lease.onEvent = (event) => {
    onEvent(event);
    const moved = sdkDeadline(lease);
    if (moved > deadline) {
      deadline = moved;
      record({ e: 'deadline', op, t: monoNow(), deadline });
    }
  };
  lease.signal.addEventListener('abort', () => {
    const reason = lease.signal.reason as Sdk.LeaseLostError;
    record({ e: 'lost', op, t: monoNow(), source: `${reason.source}: ${reason.reason}`.slice(0, 200) });
  });
  return { token: lease.fencingToken.toString(), valid: () => !lease.signal.aborted, release: () => lease.release() };
}

async function acquireLock(op: string, p: Plan): Promise<Held | undefined> {
  let lock: Sdk.Lock;
  try {
    lock = await clients[p.server].acquire(p.lock.name, lockOptions(op, p));
  } catch (err) {
    record(refusal(op, err, false));
    return undefined;
  }
  let deadline = sdkDeadline(lock);
  record({ e: 'grant', op, token: lock.fencingToken.toString(), t: monoNow(), deadline });
  // The lease is counted from when the Acquire was sent, so a long wait can leave little of it (or
  // none): renew first, as a careful client does. Renew fails if the grant is gone.
  if (deadline - monoNow() < config.ttlMs / 2) {
    try {
      await lock.renew();
      deadline = Math.max(deadline, sdkDeadline(lock));
      record({ e: 'deadline', op, t: monoNow(), deadline });
    } catch (err) {
      record({ e: 'lost', op, t: monoNow(), source: `renew: ${err instanceof Error ? err.message : String(err)}`.slice(0, 200) });
    }
  }
  return {
    token: lock.fencingToken.toString(),
    valid: () => monoNow() < deadline,
    release: () =>
      lock.release().then(
        () => undefined,
        () => undefined,
      ),
  };
}

function post(body: StorageRequest): Promise<StorageReply> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: config.storagePort,
        path: '/op',
        method: 'POST',
        agent,
        timeout: STORAGE_TIMEOUT_MS,
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(text) as StorageReply) : reject(new Error(`storage ${res.statusCode}: ${text}`))));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('storage timed out')));
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

async function io(op: string, p: Plan, held: Held, what: StorageOp, tCheck: number, item?: string, base?: number): Promise<StorageReply | undefined> {
  const body: StorageRequest = { lock: p.lock.name, kind: p.kind, op: what, token: held.token, fenced: !config.careless, client: op, item, base };
  let reply: StorageReply | undefined;
  let detail: string | undefined;
  try {
    reply = await post(body);
    detail = reply.detail;
  } catch (err) {
    detail = String(err);
  }
  record({ e: 'io', op, io: what, item, tCheck, t: monoNow(), ok: reply ? reply.ok : null, detail });
  return reply;
}

/**
 * Exclusive holders (plain locks, writers) read the list and write it back one item longer: a
 * read-modify-write, so an overlap that the fence misses shows up as a lost item. Readers and
 * semaphore holders append. Each storage call is preceded by a look at the lease, and a write by
 * a short gap after that look, like any program that computes after checking (where a pause hurts).
 */
async function criticalSection(op: string, p: Plan, held: Held): Promise<void> {
  const valid = () => config.careless || held.valid();
  for (const [round, think] of p.thinks.entries()) {
    const item = `${op}#${round}`;
    let tCheck = monoNow();
    if (!valid()) return;
    if (p.kind === 'exclusive' || p.kind === 'writer') {
      const read = await io(op, p, held, 'read', tCheck);
      if (!read?.ok) return;
      await sleep(think);
      tCheck = monoNow();
      if (!valid()) return;
      await sleep(random.int(0, 20));
      const wrote = await io(op, p, held, 'write', tCheck, item, read.length);
      if (!wrote?.ok) return;
    } else {
      const appended = await io(op, p, held, 'append', tCheck, item);
      if (!appended?.ok) return;
      await sleep(think);
    }
  }
}

async function runOp(loop: number, op: string, p: Plan): Promise<void> {
  const base = { loop, lock: p.lock.name, api: p.api, kind: p.kind };
  record({
    e: 'start',
    op,
    lock: p.lock.name,
    kind: p.kind,
    api: p.api,
    transport: config.transport,
    ttl: config.ttlMs,
    wait: p.waitMs,
    server: p.server,
    t: monoNow(),
  });
  tell({ type: 'state', status: 'waiting', ...base });
  const held = p.api === 'hold' ? await holdLease(op, p) : await acquireLock(op, p);
  if (held) {
    tell({ type: 'state', status: 'holding', ...base });
    await criticalSection(op, p, held);
    record({ e: 'release', op, t: monoNow() });
    tell({ type: 'state', status: 'idle', loop });
    await held.release();
  }
  tell({ type: 'state', status: 'idle', loop });
  record({ e: 'end', op, t: monoNow() });
}

async function loop(index: number): Promise<void> {
  for (let seq = 0; !stopping; seq++) {
    await runOp(index, `${config.id}:${index}.${seq}`, plan());
    await sleep(random.int(0, 150));
  }
}

process.on('message', (message: ToWorker) => {
  if (message.type === 'clock') tell({ type: 'clock', t: monoNow() });
  else if (message.type === 'stop') stopping = true;
});
process.on('disconnect', () => process.exit(0));
// A message sent before the listener above exists is dropped: the orchestrator waits for this.
tell({ type: 'ready' });

Promise.all(Array.from({ length: config.loops }, (_, i) => loop(i))).then(
  () => {
    clients.forEach((c) => c.close());
    agent.destroy();
    tell({ type: 'done' });
    setTimeout(() => process.exit(0), 50);
  },
  (err) => {
    process.stderr.write(`chaos worker ${config.id}: ${err?.stack ?? err}\n`);
    process.exit(1);
  },
);
