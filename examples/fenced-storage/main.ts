// Fenced storage: a storage service guarded by holdfast's fencing kit, written to by holders that
// take a lock through the TypeScript SDK. Each round plays Kleppmann's scenario: holder A writes,
// is paused (SIGSTOP) until its lease has run out and holder B has the lock and has written; A
// wakes and writes with its old fencing token. The guard refuses it (409), so B's update stands.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { MemoryFenceStore } from '../../clients/ts/fencing';
import { check, run, SHORT, startStack } from '../support';
import { startStorageService } from './service';

const ROUNDS = SHORT ? 1 : 3;
const TTL_MS = 2000;

interface Holder {
  process: ChildProcess;
  /** The first line (already printed or to come) that matches. */
  next(match: (line: Record<string, string | number>) => boolean): Promise<Record<string, string | number>>;
}

function startHolder(args: string[]): Holder {
  const child = spawn(process.execPath, [join(__dirname, 'holder.js'), ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines: Record<string, string | number>[] = [];
  const waiters: (() => void)[] = [];
  let buffer = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    const parts = buffer.split('\n');
    buffer = parts.pop()!;
    for (const part of parts) lines.push(JSON.parse(part));
    for (const wake of waiters.splice(0)) wake();
  });
  const next = async (match: (line: Record<string, string | number>) => boolean) => {
    for (;;) {
      const found = lines.find(match);
      if (found) return found;
      if (lines.some((l) => l.event === 'error')) throw new Error(`holder failed: ${JSON.stringify(lines)}`);
      await new Promise<void>((resolve) => waiters.push(resolve));
    }
  };
  return { process: child, next };
}

const wrote = (value: string) => (line: Record<string, string | number>) => line.event === 'wrote' && line.value === value;

run(async () => {
  const stack = await startStack(1);
  // The document lives in the service's memory, so its fences may too (MemoryFenceStore). A resource
  // kept in Redis or PostgreSQL would keep its fences there: RedisFenceStore, PostgresFenceStore.
  const service = await startStorageService(new MemoryFenceStore());
  const holders: Holder[] = [];
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      const lock = `fenced-doc-${process.pid}-${round}`;
      const start = (label: string) => {
        const holder = startHolder([stack.servers[0].addr, lock, String(TTL_MS), service.url, label]);
        holders.push(holder);
        return holder;
      };
      const a = start('a');
      const aToken = (await a.next((l) => l.event === 'acquired')).token;
      check((await a.next(wrote('a-1'))).status === 200, `round ${round}: holder A (fencing token ${aToken}) wrote a-1`);
      a.process.kill('SIGSTOP');
      const pausedAt = Date.now();
      const b = start('b');
      const bToken = (await b.next((l) => l.event === 'acquired')).token;
      console.log(
        `holder A paused; holder B got the lock ${Date.now() - pausedAt} ms later (A's stream found dead, then its lease ran out), fencing token ${bToken}`,
      );
      check((await b.next(wrote('b-1'))).status === 200, `round ${round}: holder B wrote b-1`);
      a.process.kill('SIGCONT');
      a.process.kill('SIGUSR2');
      const stale = await a.next(wrote('a-2'));
      console.log(`holder A woke and wrote a-2 with token ${aToken}: ${stale.status} ${JSON.stringify(stale.body)}`);
      check(stale.status === 409, `round ${round}: the guard refused A's stale write`);
      check(service.doc() === 'b-1', `round ${round}: B's update was not lost`);
      b.process.kill('SIGUSR2');
      check((await b.next(wrote('b-2'))).status === 200, `round ${round}: holder B, still the holder, wrote b-2`);
      for (const h of [a, b]) h.process.kill('SIGKILL');
    }
    check(service.refusals.length === ROUNDS, `the service reported ${ROUNDS} stale write(s), one per round`);
    check(
      service.writes.every((w) => !w.value.startsWith('a-') || w.value === 'a-1'),
      'no stale write was applied',
    );
  } finally {
    for (const h of holders) {
      h.process.kill('SIGCONT');
      h.process.kill('SIGKILL');
    }
    await service.close();
    await stack.stop();
  }
});
