// One fuzz run against a live server: steady random traffic on a few connections, plus waves of
// thousands of Hold and waiting Acquire calls cancelled at random moments (waves.ts), then a drain
// in which every grant a client still holds is given back. Returns what happened; the test
// asserts on it.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { status } from '@grpc/grpc-js';
import { AcquireRequest, AcquireResponse, HoldRequest, type HoldResponse } from '../../gen/holdfast/v1/lock';
import { bytesField, message } from '../support/wire-bytes';
import { describeBytes, encodeBody, readShapes, type BodyContext, type LiveGrant } from './bodies';
import { call, LARGE_BYTES, openConnection, type Connection, type Send } from './calls';
import { checkOutcome, isRedisTrouble } from './checks';
import { planBatch, type End, type Method, type Plan } from './plans';
import { runWave, type WaveContext } from './waves';

export interface FuzzOptions {
  addr: string;
  seed: number;
  seconds: number;
  /** Calls kept in flight by the steady traffic. */
  concurrency: number;
  steadyConnections: number;
  /** Calls per wave, spread over waveConnections (each stays under the RST_STREAM limit). */
  waveSize: number;
  waveConnections: number;
  /** Granted Holds per wave on one more connection, through a TCP proxy that cuts it at a random moment. */
  cutHolds: number;
  log(line: string): void;
}

export interface Failure {
  what: string;
  method: Method;
  family: string;
  /** Seconds into the run when the call was sent, its connection, how long it took. */
  at: number;
  conn: string;
  ms?: number;
  end: string;
  body: string;
  /** The whole body in hex when it is short enough to paste into a reproduction. */
  hex?: string;
}

export interface FuzzReport {
  calls: number;
  /** Per method, how many calls ended with each status. */
  codes: Record<string, Record<string, number>>;
  failures: Failure[];
  /** Calls still open when the drain gave up. */
  hung: Failure[];
  /** Lock names of every Acquire and Hold the server accepted (or might have). */
  names: Set<string>;
  lostReasons: Record<string, number>;
  /** Cancels and deadlines dropped because the connection's RST_STREAM budget was spent. */
  budgetSkips: number;
  /** Plans left out because LARGE_IN_FLIGHT large requests were already on their way. */
  largeSkipped: number;
  /** Calls the server answered UNAVAILABLE because Redis did not reply within its command timeout. */
  redisUnavailable: number;
  /** How late this process's event loop ran (a stalled client answers no keepalive ping). */
  loopDelayMs: { max: number; p99: number };
  waves: number;
  waveCalls: number;
}

const DRAIN_MS = 70_000;
/**
 * Large requests (LARGE_BYTES) go out on a connection of their own, two at a time: a connection
 * carrying dozens of 1 MiB requests at once took 10-25 s to deliver each of them, and held up
 * every large request sent after them (HOLDFAST_FUZZ_SEED=1).
 */
const LARGE_IN_FLIGHT = 2;

/** Recent grants: what `live` values in plans refer to. */
class LiveGrants {
  private readonly ring: LiveGrant[] = [];
  private next = 0;

  add(grant: LiveGrant): void {
    if (this.ring.length < 512) this.ring.push(grant);
    else this.ring[this.next++ % 512] = grant;
  }

  pick(i: number): LiveGrant | undefined {
    return this.ring.length ? this.ring[i % this.ring.length] : undefined;
  }
}

const hasName = (code: number) => code !== status.INVALID_ARGUMENT && code !== status.RESOURCE_EXHAUSTED;

export async function runFuzz(options: FuzzOptions): Promise<FuzzReport> {
  const { shapes, numbers } = readShapes();
  const prefix = `fz${options.seed}`;
  const started = Date.now();
  let freshCount = 0;
  const report: FuzzReport = {
    calls: 0,
    codes: {},
    failures: [],
    hung: [],
    names: new Set(),
    lostReasons: {},
    budgetSkips: 0,
    largeSkipped: 0,
    redisUnavailable: 0,
    loopDelayMs: { max: 0, p99: 0 },
    waves: 0,
    waveCalls: 0,
  };
  const live = new LiveGrants();
  /** Acquire grants not yet given back (a client holds them), by token; one entry per hold. */
  const held: LiveGrant[] = [];
  const pending = new Map<Promise<unknown>, Failure>();
  /** Work started outside the plan loop (follow-up Releases, waves): the drain waits for it too. */
  const tasks = new Set<Promise<unknown>>();
  const track = (work: () => Promise<unknown>, afterMs = 0) => {
    const task: Promise<unknown> = new Promise((r) => setTimeout(r, afterMs))
      .then(work)
      .catch((err: Error) =>
        report.failures.push({ ...describe('getServerStats', 'fuzzer', { t: 'none' }, Buffer.alloc(0)), what: `the fuzzer itself failed: ${err.stack}` }),
      )
      .finally(() => tasks.delete(task));
    tasks.add(task);
  };
  const steady = Array.from({ length: options.steadyConnections }, (_, i) => openConnection(options.addr, `fuzz-steady-${i}`));
  const large = openConnection(options.addr, 'fuzz-large');
  let largeInFlight = 0;
  const context = (grant?: LiveGrant): BodyContext => ({
    numbers,
    poolName: (i) => `${prefix}-pool-${i}`,
    freshName: () => `${prefix}-f${freshCount++}-`,
    live: grant,
  });

  const describe = (method: Method, family: string, end: End, body: Buffer, conn = ''): Failure => ({
    what: '',
    method,
    family,
    at: Math.round((Date.now() - started) / 100) / 10,
    conn,
    end: JSON.stringify(end),
    body: describeBytes(body),
    hex: body.length <= 256 ? body.toString('hex') : undefined,
  });

  /** Sends one call, records its status, checks it; resolves with the outcome. */
  const send: Send = (conn, method, family, body, end, onAcquired, connectionCut = false) => {
    if ((end.t === 'cancel' || end.t === 'deadline') && !conn.budget.take()) {
      report.budgetSkips++;
      end = { t: 'none' };
    }
    const info = describe(method, family, end, body, conn.label);
    const done = call(conn, method, body, end, { onAcquired }).then((outcome) => {
      report.calls++;
      const codes = (report.codes[method] ??= {});
      const name = status[outcome.code] ?? String(outcome.code);
      codes[name] = (codes[name] ?? 0) + 1;
      if (outcome.code === status.UNAVAILABLE && isRedisTrouble(outcome.details)) report.redisUnavailable++;
      const problem = checkOutcome(method, outcome, body.length, connectionCut);
      if (problem) report.failures.push({ ...info, what: problem, ms: outcome.ms });
      const lost = outcome.events.find((e) => e.lost)?.lost;
      if (lost) report.lostReasons[lost.code] = (report.lostReasons[lost.code] ?? 0) + 1;
      if ((method === 'acquire' || method === 'hold') && hasName(outcome.code)) rememberName(method, body);
      return outcome;
    });
    pending.set(done, info);
    void done.finally(() => pending.delete(done));
    return done;
  };

  const rememberName = (method: 'acquire' | 'hold', body: Buffer) => {
    try {
      const name = (method === 'acquire' ? AcquireRequest : HoldRequest).decode(body).name;
      // biome-ignore lint/suspicious/noControlCharactersInRegex: the names the server accepts have no control characters
      if (name.length > 0 && Buffer.byteLength(name) <= 512 && !/[\u0000-\u001f\u007f-\u009f]/.test(name)) report.names.add(name);
    } catch {
      // Not a message: the server refused it before it reached a lock.
    }
  };

  /** Gives back one hold of an Acquire grant, now or after `afterMs`. */
  const giveBack = async (grant: LiveGrant, afterMs: number) => {
    if (afterMs > 0) await new Promise((r) => setTimeout(r, afterMs));
    const body = message(bytesField(1, grant.name), bytesField(2, grant.token));
    const outcome = await send(steady[0], 'release', 'followup', body, { t: 'none' });
    const index = held.indexOf(grant);
    if (index >= 0 && outcome.code !== -1) held.splice(index, 1);
  };

  const runPlan = async (plan: Plan) => {
    const body = encodeBody(plan, context(live.pick(plan.live)));
    if (body.length <= LARGE_BYTES) return runBody(plan, body, steady[plan.conn % steady.length]);
    // Waiting for a slot would hold up the steady traffic: a large request that finds none is left out.
    if (largeInFlight >= LARGE_IN_FLIGHT) {
      report.largeSkipped++;
      return;
    }
    largeInFlight++;
    try {
      await runBody(plan, body, large);
    } finally {
      largeInFlight--;
    }
  };

  const runBody = async (plan: Plan, body: Buffer, conn: Connection) => {
    const end = plan.end;
    const onAcquired = (event: HoldResponse) => {
      const a = event.acquired!;
      const grant: LiveGrant = { name: HoldRequest.decode(body).name, token: a.token, holdId: a.holdId, fence: a.fencingToken, from: 'hold' };
      live.add(grant);
      if (end.t !== 'release') return;
      const fields = [bytesField(1, grant.name), bytesField(2, grant.token)];
      if (end.withHoldId) fields.push(bytesField(3, grant.holdId));
      track(() => send(conn, 'release', 'followup', message(...fields), { t: 'none' }), end.afterMs);
    };
    const outcome = await send(conn, plan.method, plan.family, body, end, onAcquired);
    if (plan.method !== 'acquire' || outcome.code !== status.OK || !outcome.response) return;
    const reply = AcquireResponse.decode(outcome.response);
    if (!reply.acquired) return;
    const grant: LiveGrant = { name: AcquireRequest.decode(body).name, token: reply.token, holdId: '', fence: reply.fencingToken, from: 'acquire' };
    live.add(grant);
    held.push(grant);
    // null: this client forgets the grant (its lease is short) and lets it run out.
    if (plan.releaseAfterMs === null) held.splice(held.indexOf(grant), 1);
    else await giveBack(grant, plan.releaseAfterMs);
  };

  const loop = monitorEventLoopDelay({ resolution: 20 });
  loop.enable();
  const until = started + options.seconds * 1000;
  const waves: WaveContext = {
    addr: options.addr,
    seed: options.seed,
    prefix,
    size: options.waveSize,
    connections: options.waveConnections,
    cutHolds: options.cutHolds,
    control: steady[0],
    send,
    giveBack: (grant) => giveBack(grant, 0),
    onGrant: (grant) => live.add(grant),
    onName: (name) => report.names.add(name),
  };
  const waveTimer = setInterval(
    () => {
      const index = report.waves++;
      report.waveCalls += options.waveSize + options.cutHolds;
      track(() => runWave(waves, index));
    },
    Math.min(30_000, options.seconds * 400),
  );
  const inflight = new Set<Promise<void>>();
  let batch = 0;
  let queue: Plan[] = [];
  try {
    while (Date.now() < until) {
      if (inflight.size >= options.concurrency) {
        await Promise.race(inflight);
        continue;
      }
      if (queue.length === 0) queue = planBatch(shapes, options.seed, batch++, 256);
      const plan = queue.shift()!;
      const run: Promise<void> = runPlan(plan)
        .catch((err: Error) =>
          report.failures.push({ ...describe(plan.method, 'fuzzer', plan.end, Buffer.alloc(0)), what: `the fuzzer itself failed: ${err.stack}` }),
        )
        .then(() => {
          inflight.delete(run);
        });
      inflight.add(run);
      if (inflight.size % 16 === 0) await new Promise((r) => setImmediate(r));
    }
  } finally {
    clearInterval(waveTimer);
  }
  options.log(`fuzz: ${batch} batches of plans sent in ${options.seconds} s; draining`);

  // Drain: every call ends by itself; grants a client still holds are given back meanwhile,
  // since a waiter may be queued behind them.
  const drainUntil = Date.now() + DRAIN_MS;
  while ((inflight.size > 0 || pending.size > 0 || tasks.size > 0 || held.length > 0) && Date.now() < drainUntil) {
    for (const grant of held.splice(0)) track(() => giveBack(grant, 0));
    await Promise.race([Promise.all([...inflight, ...tasks]), new Promise((r) => setTimeout(r, 250))]);
  }
  report.hung = [...pending.values()].map((info) => ({ ...info, what: 'still open after the drain' }));
  loop.disable();
  report.loopDelayMs = { max: Math.round(loop.max / 1e6), p99: Math.round(loop.percentile(99) / 1e6) };
  for (const conn of [...steady, large]) conn.client.close();
  return report;
}
