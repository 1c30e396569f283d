// The singleton job: N instances campaign for one lock; exactly one runs the job at a time; when
// the leader is SIGKILLed another takes over within one short lease (plus a margin), and the
// observers print each leader. Checks the ledger afterwards: fencing tokens only rise, and no
// draw of a deposed leader was written after a newer leader's.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { check, run, SHORT, sleep, startStack } from '../support';

const INSTANCES = 3;
const TTL_MS = 2000;
const MARGIN_MS = 3000;
const KILLS = SHORT ? 1 : 3;

interface Child {
  process: ChildProcess;
  lines: Record<string, string>[];
  waiters: (() => void)[];
}

function start(script: string, args: string[]): Child {
  const child: Child = {
    process: spawn(process.execPath, [join(__dirname, script), ...args], { stdio: ['ignore', 'pipe', 'inherit'] }),
    lines: [],
    waiters: [],
  };
  let buffer = '';
  child.process.stdout!.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    const parts = buffer.split('\n');
    buffer = parts.pop()!;
    for (const part of parts) child.lines.push(JSON.parse(part));
    for (const wake of child.waiters.splice(0)) wake();
  });
  return child;
}

/** The first line of any child, from each child's `from` on, that matches; fails after timeoutMs. */
async function nextLine(children: Child[], match: (l: Record<string, string>) => boolean, timeoutMs: number, from = children.map((c) => c.lines.length)) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    for (const [i, c] of children.entries()) {
      const found = c.lines.slice(from[i]).find(match);
      if (found) return { child: c, line: found };
    }
    const left = until - Date.now();
    if (left <= 0) throw new Error(`no matching line within ${timeoutMs} ms`);
    await Promise.race([sleep(left), ...children.map((c) => new Promise<void>((r) => c.waiters.push(r)))]);
  }
}

const job = `prize-draw-${process.pid}`;

run(async () => {
  const stack = await startStack(2);
  /** Waits until the ledger holds a draw made with `fence`: the new leader runs the job. */
  const untilDrawn = async (fence: string) => {
    for (const until = Date.now() + MARGIN_MS; Date.now() < until; await sleep(20)) {
      if ((await stack.redis.client.get(`${job}:newest-fence`)) === fence) return;
    }
    throw new Error(`the leader with fencing token ${fence} ran no draw`);
  };
  const children: Child[] = [];
  try {
    const instances = Array.from({ length: INSTANCES }, (_, i) =>
      start('instance.js', [stack.servers[i % 2].addr, stack.redis.url, job, String(i + 1), String(TTL_MS)]),
    );
    const observers = [0, 1].map((s) => start('observer.js', [stack.servers[s].addr, job]));
    children.push(...instances, ...observers);
    let leader = await nextLine(instances, (l) => l.event === 'leader', 20_000);
    console.log(`instance ${leader.line.id} leads (fencing token ${leader.line.fence})`);
    for (let kill = 1; kill <= KILLS; kill++) {
      await sleep(500);
      const from = instances.map((c) => c.lines.length);
      const observed = observers.map((o) => o.lines.length);
      const killedAt = Date.now();
      leader.child.process.kill('SIGKILL');
      const next = await nextLine(instances, (l) => l.event === 'leader', TTL_MS + MARGIN_MS, from);
      const tookMs = Date.now() - killedAt;
      console.log(`SIGKILLed instance ${leader.line.id}; instance ${next.line.id} took over after ${tookMs} ms (ttl ${TTL_MS} ms)`);
      check(BigInt(next.line.fence) > BigInt(leader.line.fence), 'the new leader has a greater fencing token');
      for (const [i, o] of observers.entries()) {
        await nextLine([o], (l) => l.fence === next.line.fence, MARGIN_MS, [observed[i]]);
      }
      check(true, `both observers printed instance ${next.line.id} as the leader`);
      await untilDrawn(next.line.fence);
      // The killed instance comes back, as a supervisor would restart it.
      const id = leader.line.id;
      const restarted = start('instance.js', [stack.servers[kill % 2].addr, stack.redis.url, job, id, String(TTL_MS)]);
      instances[instances.indexOf(leader.child)] = restarted;
      children.push(restarted);
      leader = next;
    }
    const draws = (await stack.redis.client.lrange(`${job}:draws`, 0, -1)).map((d) => JSON.parse(d) as { id: string; fence: string });
    const risesOnly = draws.every((d, i) => i === 0 || BigInt(d.fence) >= BigInt(draws[i - 1].fence));
    check(draws.length > 0 && risesOnly, `the ledger's ${draws.length} draws come from one leader at a time, fencing tokens rising`);
    const leaders = new Set(draws.map((d) => d.fence)).size;
    check(leaders === KILLS + 1, `${leaders} leaders wrote draws, one per term`);
  } finally {
    for (const c of children) c.process.kill('SIGKILL');
    await stack.stop();
  }
});
