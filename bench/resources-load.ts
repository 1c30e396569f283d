// The load of the resources benchmark (bench/resources.ts), in child processes of its own so that
// the measuring process does nothing but time its pairs: queued Acquire waits or granted Hold
// streams, spread over connections. This file is both the forking side (startLoad) and, when
// forked, the load process (runLoad).
import { fork, type ChildProcess } from 'node:child_process';
import type { ServiceError } from '@grpc/grpc-js';
import { HoldRequest } from '../gen/holdfast/v1/lock';
import { lockClient, sleep, type LockClient } from './support';

export const LOAD_PROCESSES = 2;
/** How long the load may take to be in place, and the queues to fill or drain. */
export const LOAD_TIMEOUT_MS = 120_000;
/** Each load process opens this many calls, then pauses: 2 x 50 per 200 ms is 500 calls a second. */
const OPEN_BATCH = 50;
const OPEN_BATCH_MS = 200;

/** What a load process opens: `names[i]` is the lock of call i; waits queue behind a holder. */
export interface LoadJob {
  kind: 'waits' | 'holds';
  addr: string;
  names: string[];
  ttlMs: number;
  /** Calls per client connection. */
  perConnection: number;
}

/**
 * Opens the job's calls over connections of `perConnection` calls; says 'ready' once every wait
 * is sent and every hold granted or refused. Answers 'count' with the calls that have ended
 * (refused, or ended later), by status: none should, but an overloaded Redis ends some.
 */
async function runLoad(job: LoadJob): Promise<void> {
  const clients: LockClient[] = [];
  let settled = 0;
  const ended = new Map<string, number>();
  const settle = () => {
    if (++settled === job.names.length) process.send!({ type: 'ready' });
  };
  const end = (err: ServiceError) => ended.set(`${err.code} ${err.details}`, (ended.get(`${err.code} ${err.details}`) ?? 0) + 1);
  process.on('message', (message: string) => {
    if (message === 'count') process.send!({ type: 'count', ended: [...ended] });
    // Exiting closes the connections: the server ends every call on them, with no RST_STREAM per call.
    else process.exit(0);
  });
  process.on('disconnect', () => process.exit(0)); // the benchmark is gone
  for (const [i, name] of job.names.entries()) {
    // Paced: a burst of thousands of scripts queues up in Redis past the server's 1 s command timeout.
    if (i > 0 && i % OPEN_BATCH === 0) await sleep(OPEN_BATCH_MS);
    if (i % job.perConnection === 0) clients.push(lockClient(job.addr));
    const client = clients.at(-1)!;
    if (job.kind === 'waits') {
      client.acquire({ name, waitTimeoutMs: '3600000' }, 3_700_000).catch(end);
      settle();
    } else {
      const call = client.client.hold(HoldRequest.fromPartial({ name, ttlMs: String(job.ttlMs) }));
      let granted = false;
      call.once('data', () => {
        granted = true;
        settle();
      });
      call.on('error', (err: ServiceError) => {
        end(err);
        if (!granted) settle();
      });
    }
  }
}

export interface Load {
  /** What ended the calls that ended early, with counts: a sound run has none. */
  ended(): Promise<[string, number][]>;
  stop(): Promise<void>;
}

function ask<T>(child: ChildProcess, message: string, answer: string): Promise<T> {
  return new Promise((resolve) => {
    const onMessage = (m: { type: string }) => {
      if (m.type !== answer) return;
      child.off('message', onMessage);
      resolve(m as T);
    };
    child.on('message', onMessage);
    if (message) child.send(message);
  });
}

/** Asks each load process to exit (which ends its calls) and resolves once all have; again is a no-op. */
async function stopAll(children: ChildProcess[]): Promise<void> {
  await Promise.all(
    children.map((child) => {
      child.removeAllListeners('exit');
      if (child.exitCode !== null || child.signalCode !== null) return undefined;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.send('stop');
      return exited;
    }),
  );
}

/** Spreads the job over LOAD_PROCESSES child processes; resolves once every call is under way. */
export async function startLoad(job: LoadJob): Promise<Load> {
  const children = Array.from({ length: LOAD_PROCESSES }, (_, p) => {
    const names = job.names.filter((_, i) => i % LOAD_PROCESSES === p);
    const child = fork(__filename, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    child.send({ ...job, names }); // not in argv: 5 000 lock names pass the 128 KiB a single argument may have
    return child;
  });
  const died = new Promise<never>((_, reject) =>
    children.forEach((child) => child.once('exit', (code) => reject(new Error(`load process exited with ${code} before it was ready`)))),
  );
  // Something that never answers: fail rather than wait for ever.
  const tooLong = new Promise<never>((_, reject) =>
    setTimeout(() => reject(new Error(`the ${job.kind} were not all under way after ${LOAD_TIMEOUT_MS} ms`)), LOAD_TIMEOUT_MS).unref(),
  );
  try {
    await Promise.race([Promise.all(children.map((child) => ask(child, '', 'ready'))), died, tooLong]);
  } catch (err) {
    await stopAll(children);
    throw err;
  }
  return {
    async ended() {
      const counts = new Map<string, number>();
      for (const child of children) {
        const { ended } = await ask<{ ended: [string, number][] }>(child, 'count', 'count');
        for (const [what, n] of ended) counts.set(what, (counts.get(what) ?? 0) + n);
      }
      return [...counts];
    },
    stop: () => stopAll(children),
  };
}

if (require.main === module) process.once('message', (job: LoadJob) => void runLoad(job));
