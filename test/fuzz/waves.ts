// Waves: thousands of Hold and waiting Acquire calls opened at once on a few locks that are
// taken, each cancelled at a random moment; and Holds granted on a connection that is then cut.
// A wave's cancels are spread over several connections, each below the RST_STREAM limit that
// drops a connection (ResetBudget in calls.ts).
import fc from 'fast-check';
import { status } from '@grpc/grpc-js';
import { AcquireResponse } from '../../gen/holdfast/v1/lock';
import { startTcpProxy } from '../support/tcp-proxy';
import { bytesField, message, varintField } from '../support/wire-bytes';
import type { LiveGrant } from './bodies';
import { openConnection, type Connection, type Outcome, type Send } from './calls';

export interface WaveContext {
  addr: string;
  seed: number;
  /** Lock names of this run start with it. */
  prefix: string;
  /** Calls per wave, and the connections they are spread over. */
  size: number;
  connections: number;
  /** Granted Holds on the connection that is cut. */
  cutHolds: number;
  /** Where the locks that make the wave queue are taken and given back. */
  control: Connection;
  send: Send;
  giveBack(grant: LiveGrant): Promise<void>;
  onGrant(grant: LiveGrant): void;
  onName(name: string): void;
}

/** Names per wave; all but the first are taken while the wave runs, so its calls queue. */
const NAMES = 5;
const WAVE_TTL_MS = 2000;
const WAVE_WAIT_MS = 4000;

const acquired = (outcome: Outcome) => (outcome.code === status.OK && outcome.response ? AcquireResponse.decode(outcome.response) : undefined);

export async function runWave(ctx: WaveContext, index: number): Promise<void> {
  const conns = Array.from({ length: ctx.connections }, (_, i) => openConnection(ctx.addr, `fuzz-wave-${index}-${i}`));
  const names = Array.from({ length: NAMES }, (_, i) => `${ctx.prefix}-wave${index}-${i}`);
  names.forEach((name) => ctx.onName(name));
  const blockers = await Promise.all(
    names.slice(1).map((name) => ctx.send(ctx.control, 'acquire', 'wave', message(bytesField(1, name), varintField(3, 20_000)), { t: 'none' })),
  );
  const calls = fc.sample(fc.record({ hold: fc.boolean(), name: fc.nat(NAMES - 1), cancelAfterMs: fc.integer({ min: 0, max: 2500 }) }), {
    seed: ctx.seed ^ (0x5eed + index),
    numRuns: ctx.size,
  });
  const opened = calls.map(async (c, i) => {
    const name = names[c.name];
    const body = message(bytesField(1, name), varintField(3, WAVE_TTL_MS), varintField(4, WAVE_WAIT_MS));
    const outcome = await ctx.send(conns[i % conns.length], c.hold ? 'hold' : 'acquire', 'wave', body, { t: 'cancel', afterMs: c.cancelAfterMs }, (e) =>
      ctx.onGrant({ name, token: e.acquired!.token, holdId: e.acquired!.holdId, fence: e.acquired!.fencingToken, from: 'hold' }),
    );
    // An Acquire granted before its cancel came: this client holds it, and gives it back.
    const reply = c.hold ? undefined : acquired(outcome);
    if (reply?.acquired) await ctx.giveBack({ name, token: reply.token, holdId: '', fence: reply.fencingToken, from: 'acquire' });
  });
  await Promise.all([...opened, cutWave(ctx, index)]);
  await Promise.all(
    blockers.map((outcome, i) => {
      const reply = acquired(outcome);
      return reply?.acquired ? ctx.giveBack({ name: names[i + 1], token: reply.token, holdId: '', fence: reply.fencingToken, from: 'acquire' }) : undefined;
    }),
  );
  for (const conn of conns) conn.client.close();
}

/** Holds granted on a connection that is then cut: each keeps its lock until its lease has run out. */
async function cutWave(ctx: WaveContext, index: number): Promise<void> {
  const proxy = await startTcpProxy(ctx.addr);
  const conn = openConnection(proxy.addr, `fuzz-wave-${index}-cut`);
  const [cutAfterMs] = fc.sample(fc.integer({ min: 300, max: 2500 }), { seed: ctx.seed ^ (0xc07 + index), numRuns: 1 });
  const holds = Array.from({ length: ctx.cutHolds }, (_, i) => {
    const name = `${ctx.prefix}-wave${index}-cut${i}`;
    ctx.onName(name);
    // Every fourth asks for release_on_disconnect: freed at once rather than when its lease ends.
    const body = message(bytesField(1, name), varintField(3, WAVE_TTL_MS), varintField(8, i % 4 === 0 ? 1 : 0));
    return ctx.send(conn, 'hold', 'cut', body, { t: 'none' }, undefined, true);
  });
  setTimeout(() => proxy.cut(), cutAfterMs);
  await Promise.all(holds);
  conn.client.close();
  await proxy.close();
}
