// A client process of the hold benchmark (forked by hold.ts): holds its share of the Hold
// streams over a few channels, counts their events, and measures cancel-to-free on request.
import { Metadata, type ClientReadableStream, type ServiceError } from '@grpc/grpc-js';
import type { HoldRequest, HoldResponse } from '../gen/holdfast/v1/lock';
import { lockClient, nowMs, sleep, type LockClient } from './support';

export type WorkerCommand =
  | { type: 'init'; addr: string; channels: number }
  | { type: 'open'; names: string[]; ttlMs: number; concurrency: number }
  | { type: 'cancel'; names: string[] }
  | { type: 'stats' }
  | { type: 'sample'; names: string[] }
  | { type: 'close' };

export interface WorkerStats {
  alive: number;
  renewed: number;
  lost: number;
  lostReasons: string[];
  unexpectedEnds: number;
  endDetails: string[];
}

export interface OpenResult {
  acquired: number;
  failed: number;
  failures: string[];
}

export interface SampleResult {
  latenciesMs: number[];
  failures: string[];
}

interface Held {
  name: string;
  call: ClientReadableStream<HoldResponse>;
  acquired: boolean;
  cancelled: boolean;
  ended: boolean;
}

const held = new Map<string, Held>();
const stats: WorkerStats = { alive: 0, renewed: 0, lost: 0, lostReasons: [], unexpectedEnds: 0, endDetails: [] };
let clients: LockClient[] = [];
let waiter: LockClient;

function reply(message: unknown): void {
  process.send!(message);
}

/** Opens one Hold stream; resolves once `acquired` arrives (or rejects when the stream ends first). */
function openHold(client: LockClient, name: string, ttlMs: number): Promise<void> {
  const request: HoldRequest = {
    name,
    owner: '',
    ttlMs: String(ttlMs),
    waitTimeoutMs: '0',
    mode: 0,
    limit: 0,
    maxHoldMs: '0',
    releaseOnDisconnect: false,
    value: '',
  };
  const call = client.client.hold(request, new Metadata(), {});
  const entry: Held = { name, call, acquired: false, cancelled: false, ended: false };
  held.set(name, entry);
  return new Promise<void>((resolve, reject) => {
    call.on('data', (event: HoldResponse) => {
      if (event.acquired) {
        entry.acquired = true;
        stats.alive++;
        resolve();
      } else if (event.renewed) {
        stats.renewed++;
      } else if (event.lost) {
        stats.lost++;
        if (stats.lostReasons.length < 10) stats.lostReasons.push(`${name}: ${event.lost.code} ${event.lost.reason}`);
      }
    });
    const ended = (detail: string) => {
      if (entry.ended) return;
      entry.ended = true;
      if (entry.acquired) stats.alive--;
      if (!entry.cancelled) {
        stats.unexpectedEnds++;
        if (stats.endDetails.length < 10) stats.endDetails.push(`${name}: ${detail}`);
      }
      reject(new Error(detail));
    };
    call.on('error', (err: ServiceError) => ended(`${err.code} ${err.details}`));
    call.on('status', (s) => {
      if (s.code === 0) ended('ended with OK');
    });
  });
}

async function open(names: string[], ttlMs: number, concurrency: number): Promise<OpenResult> {
  const result: OpenResult = { acquired: 0, failed: 0, failures: [] };
  let next = 0;
  const lane = async () => {
    while (next < names.length) {
      const i = next++;
      try {
        await openHold(clients[i % clients.length], names[i], ttlMs);
        result.acquired++;
      } catch (err) {
        result.failed++;
        if (result.failures.length < 5) result.failures.push(String((err as Error).message));
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, names.length) }, lane));
  return result;
}

function cancel(names: string[]): void {
  for (const name of names) {
    const entry = held.get(name);
    if (!entry) continue;
    entry.cancelled = true;
    entry.call.cancel();
    held.delete(name);
  }
}

/** For each held lock in turn: queue a waiter, cancel the Hold stream, time until the waiter is granted. */
async function sample(names: string[]): Promise<SampleResult> {
  const result: SampleResult = { latenciesMs: [], failures: [] };
  for (const name of names) {
    const entry = held.get(name);
    if (!entry || entry.ended) {
      result.failures.push(`${name}: not held`);
      continue;
    }
    const granted = waiter.acquire({ name, ttlMs: '30000', waitTimeoutMs: '10000' }, 15_000);
    let queued = false;
    for (const until = nowMs() + 2000; !queued && nowMs() < until; ) {
      queued = (await waiter.inspect({ name })).waiters >= 1;
      if (!queued) await sleep(1);
    }
    if (!queued) result.failures.push(`${name}: the waiter never showed up in the queue`);
    const cancelledAt = nowMs();
    cancel([name]);
    try {
      const response = await granted;
      const latency = nowMs() - cancelledAt;
      if (!response.acquired) result.failures.push(`${name}: waiter not granted`);
      else {
        result.latenciesMs.push(latency);
        await waiter.release({ name, token: response.token });
      }
    } catch (err) {
      result.failures.push(`${name}: ${(err as Error).message}`);
    }
  }
  return result;
}

process.on('message', (command: WorkerCommand) => {
  void (async () => {
    switch (command.type) {
      case 'init':
        clients = Array.from({ length: command.channels }, () => lockClient(command.addr));
        waiter = lockClient(command.addr);
        return reply({ type: 'ready' });
      case 'open':
        return reply({ type: 'opened', result: await open(command.names, command.ttlMs, command.concurrency) });
      case 'cancel':
        cancel(command.names);
        return reply({ type: 'cancelled' });
      case 'stats':
        return reply({ type: 'stats', stats });
      case 'sample':
        return reply({ type: 'sampled', result: await sample(command.names) });
      case 'close':
        cancel([...held.keys()]);
        await sleep(200);
        for (const c of [...clients, waiter]) c.close();
        reply({ type: 'closed', stats });
        process.disconnect();
        return;
    }
  })().catch((err) => {
    process.stderr.write(`hold-worker: ${(err as Error).stack}\n`);
    process.exit(1);
  });
});
