// `npm run bench:redis-cost`: where Redis's CPU goes in one uncontended acquire + release, the
// ceiling of every holdfast replica in front of one Redis shard (issue 10). It talks to its own
// redis-server directly, with no holdfast server, and runs variants of the two calls side by
// side, rounds interleaved:
//
//   raw SET NX PX + compare-and-delete   the least any Redis lock can do (2 calls, 1 a script)
//   two empty scripts                    the floor of two EVALSHA calls with holdfast's KEYS and ARGV
//   two scripts defining the helpers     what pasting lua/includes costs per call, before any work
//   holdfast as shipped                  acquire-4 + release-4, functions of the lock library
//   holdfast without the Watch notice    the same with includes/events' SPUBLISH left out
//   holdfast as EVAL scripts             the same code as it ran before the library: each script
//                                        made every helper of includes/state again on every call
//   two scripts of 10 redis.calls        what one redis.call costs (PTTL, the cheapest)
//   hand-off, functions / EVAL           W2's step: release to the head of 8 queued waiters (this
//                                        server's, answered from the reply), then queue again
//   grant record: cjson / cmsgpack       decode + encode of one grant record, per script
//
// Each variant runs twice: pipelined (batches of 500, so the figure is the scripts' own CPU)
// and as single calls from 16 concurrent workers (a read and a write per call, as a holdfast
// server's connection sees at low load). Redis CPU is from /proc of redis-server; script time
// from INFO commandstats.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { luaDir, readScript } from '../src/redis/scripts';
import { LIBRARY_INCLUDES, LockLibrary, lockLibrary } from '../src/redis/functions';
import { cpuSeconds, fixed, machineNote, markdownTable, median, redisInfo, report, setting, startBenchRedis } from './support';

const ROUNDS = setting('rounds', 'HOLDFAST_BENCH_ROUNDS', 5);
const PAIRS = setting('pairs', 'HOLDFAST_BENCH_PAIRS', 20_000);
const BATCH = 500;
const WORKERS = 16;

type Call = [command: string, ...args: (string | number | Buffer)[]];

interface Variant {
  label: string;
  /** The two calls of pair `i` on lock `lock` (keys share one hash tag). */
  pair(lock: number, i: number): [Call, Call];
  /** Checks the two replies (a variant that did not grant and release would measure nothing). */
  check(acquired: unknown, released: unknown): boolean;
  pipelined: number[];
  single: number[];
  scriptUs: number[];
  /** The variant its ratios are to (default: holdfast as shipped). */
  versus?: Variant;
}

const LEASE_MS = 30_000;
const GRANT_RECORD = '{"o":"","f":"1795409203054377","x":1,"s":0,"t":30000,"r":[],"a":0,"h":[],"k":0}';

function lockKeys(lock: number, space = 'bench'): string[] {
  const base = `${space}:{l${lock}}`;
  return [`${base}:h`, `${base}:q`, `${base}:d`, `${base}:c`];
}

function tokenOf(i: number): string {
  return `t${i}`.padEnd(22, 'x');
}

/** The lock library built from a copy of lua/ whose includes/events publishes nothing. */
function libraryWithoutWatchNotice(): LockLibrary {
  const dir = mkdtempSync(join(tmpdir(), 'holdfast-bench-lua-'));
  try {
    cpSync(luaDir(), dir, { recursive: true });
    const events = join(dir, 'includes', 'events.lua');
    writeFileSync(events, readFileSync(events, 'utf8').replace(/if channel then redis\.call\('SPUBLISH', channel, 'e '[^\n]*/, 'do end'));
    return new LockLibrary(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** What every EVAL script was before the library: the shared head, state and events, pasted before its own code. */
function asEvalScript(file: string): string {
  return [...LIBRARY_INCLUDES, file].map((f) => readScript(f)).join('\n');
}

function acquireArgs(i: number): (string | number)[] {
  return [tokenOf(i), '', LEASE_MS, 1, 1, '', '', 3000, '', '', ''];
}

function releaseArgs(i: number): (string | number)[] {
  return [tokenOf(i), '', '0', 0, '', 'srv1', ''];
}

const granted = (a: unknown) => Array.isArray(a) && a[0] === 1;

/** Waiters queued behind each hand-off lock's holder, as W2 runs with 8 workers on one lock. */
const HANDOFF_WAITERS = 8;
const HANDOFF_LOCKS = BATCH;

/**
 * One hand-off per "pair", as W2 makes them: the holder releases, the lock goes to the head of
 * its queue (a waiter of this server, 'srv1.', so in the release's own reply), and the releaser
 * queues again behind the others. Each lock's k-th waiter has token h<lock>.<k>, so the token
 * that releases next is known ahead and the calls can be pipelined too. Waiter entries live
 * 10 minutes, as a server refreshing them would keep them.
 */
async function handOffVariant(
  client: Redis,
  label: string,
  space: string,
  call: (script: 'acquire' | 'release', keys: string[], args: (string | number)[]) => Call,
): Promise<Variant> {
  const cycle = new Array<number>(HANDOFF_LOCKS).fill(0);
  const token = (lock: number, k: number) => `h${lock}.${k}`.padEnd(22, 'x');
  const queue = (lock: number, k: number) =>
    call('acquire', lockKeys(lock, space), [token(lock, k), '', LEASE_MS, 1, 1, '', `srv1.${lock}.${k}`, 600_000, '', '', '']);
  const setup = client.pipeline();
  for (let lock = 0; lock < HANDOFF_LOCKS; lock++) for (let k = 0; k <= HANDOFF_WAITERS; k++) setup.call(...queue(lock, k));
  for (const [err, reply] of (await setup.exec()) ?? [])
    if (err || !Array.isArray(reply) || (reply[0] !== 1 && reply[0] !== 2)) throw new Error(`${label}: setup ${String(err ?? reply)}`);
  return {
    label,
    pair(lock) {
      const k = cycle[lock]++;
      return [call('release', lockKeys(lock, space), [token(lock, k), '', '0', 0, '', 'srv1', '']), queue(lock, k + HANDOFF_WAITERS + 1)];
    },
    check: (released, queued) =>
      Array.isArray(released) && released[0] === 1 && Array.isArray(released[3]) && released[3].length === 1 && Array.isArray(queued) && queued[0] === 2,
    pipelined: [],
    single: [],
    scriptUs: [],
  };
}

async function variants(client: Redis): Promise<Variant[]> {
  const load = async (lua: string) => String(await client.script('LOAD', lua));
  const evalsha = (sha: string, lock: number, args: (string | number)[]): Call => ['evalsha', sha, 4, ...lockKeys(lock), ...args];
  const cad = await load("if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0");
  const empty = await load('return 1');
  const helpers = await load(`${asEvalScript('includes/begin')}\nreturn 1`);
  const acquireEval = await load(asEvalScript('acquire-4'));
  const releaseEval = await load(asEvalScript('release-4'));
  const tenCalls = await load(`for i = 1, 10 do redis.call('PTTL', KEYS[1]) end return 1`);
  const cjsonRecord = await load(`return cjson.encode(cjson.decode(ARGV[1]))`);
  const msgpackRecord = await load(`return cmsgpack.pack(cmsgpack.unpack(ARGV[1]))`);
  const msgpacked = (await client.callBuffer('EVAL', 'return cmsgpack.pack(cjson.decode(ARGV[1]))', 0, GRANT_RECORD)) as Buffer;
  const shipped = lockLibrary();
  const quiet = libraryWithoutWatchNotice();
  await shipped.load(client);
  await quiet.load(client);
  const fcall = (library: LockLibrary, script: 'acquire' | 'release', lock: number, args: (string | number)[]): Call => [
    'fcall',
    library.functionName(script),
    4,
    ...lockKeys(lock),
    ...args,
  ];
  const made = (label: string, pair: Variant['pair'], check: Variant['check'] = (a, r) => granted(a) && granted(r)): Variant => ({
    label,
    pair,
    check,
    pipelined: [],
    single: [],
    scriptUs: [],
  });
  const ok = () => true;
  const handOff = await handOffVariant(
    client,
    `holdfast hand-off: release to the next of ${HANDOFF_WAITERS} waiters, and the releaser queues again`,
    'bench-handoff-f',
    (script, keys, args) => ['fcall', shipped.functionName(script), 4, ...keys, ...args],
  );
  return [
    made(
      'raw `SET NX PX` + compare-and-delete',
      (lock, i) => [
        ['set', lockKeys(lock)[0], tokenOf(i), 'NX', 'PX', LEASE_MS],
        ['evalsha', cad, 1, lockKeys(lock)[0], tokenOf(i)],
      ],
      (a, r) => a === 'OK' && r === 1,
    ),
    made('two empty EVAL scripts', (lock, i) => [evalsha(empty, lock, acquireArgs(i)), evalsha(empty, lock, releaseArgs(i))], ok),
    made('two EVAL scripts that only define the helpers', (lock, i) => [evalsha(helpers, lock, acquireArgs(i)), evalsha(helpers, lock, releaseArgs(i))], ok),
    made('holdfast as shipped (acquire + release functions)', (lock, i) => [
      fcall(shipped, 'acquire', lock, acquireArgs(i)),
      fcall(shipped, 'release', lock, releaseArgs(i)),
    ]),
    made('holdfast without the Watch notice (SPUBLISH)', (lock, i) => [
      fcall(quiet, 'acquire', lock, acquireArgs(i)),
      fcall(quiet, 'release', lock, releaseArgs(i)),
    ]),
    made('holdfast as EVAL scripts (before the library)', (lock, i) => [
      evalsha(acquireEval, lock, acquireArgs(i)),
      evalsha(releaseEval, lock, releaseArgs(i)),
    ]),
    made('two EVAL scripts that make 10 `redis.call`s each (PTTL)', (lock) => [evalsha(tenCalls, lock, []), evalsha(tenCalls, lock, [])], ok),
    handOff,
    {
      ...(await handOffVariant(client, 'the same hand-off as EVAL scripts', 'bench-handoff-e', (script, keys, args) => [
        'evalsha',
        script === 'acquire' ? acquireEval : releaseEval,
        4,
        ...keys,
        ...args,
      ])),
      versus: handOff,
    },
    made(
      'grant record, cjson decode + encode, 2 scripts',
      () => [
        ['evalsha', cjsonRecord, 0, GRANT_RECORD],
        ['evalsha', cjsonRecord, 0, GRANT_RECORD],
      ],
      ok,
    ),
    made(
      'grant record, cmsgpack unpack + pack, 2 scripts',
      () => [
        ['evalsha', msgpackRecord, 0, msgpacked],
        ['evalsha', msgpackRecord, 0, msgpacked],
      ],
      ok,
    ),
  ];
}

async function send(client: Redis, [command, ...args]: Call): Promise<unknown> {
  return client.call(command, ...args);
}

/** Runs PAIRS pairs of `variant`: batches of BATCH acquires then their releases, pipelined. */
async function runPipelined(client: Redis, variant: Variant, offset: number): Promise<void> {
  for (let base = 0; base < PAIRS; base += BATCH) {
    const first = client.pipeline();
    const second = client.pipeline();
    for (let i = base; i < base + BATCH; i++) {
      const [a, r] = variant.pair(i - base, offset + i);
      first.call(...a);
      second.call(...r);
    }
    const acquired = (await first.exec()) ?? [];
    const released = (await second.exec()) ?? [];
    for (let k = 0; k < acquired.length; k++) {
      const [errA, a] = acquired[k];
      const [errR, r] = released[k];
      if (errA || errR || !variant.check(a, r)) throw new Error(`${variant.label}: unexpected replies ${String(errA ?? a)} / ${String(errR ?? r)}`);
    }
  }
}

/** Runs PAIRS pairs of `variant` one call at a time from WORKERS workers, each on its own locks. */
async function runSingle(client: Redis, variant: Variant, offset: number): Promise<void> {
  await Promise.all(
    Array.from({ length: WORKERS }, async (_, w) => {
      for (let i = w; i < PAIRS; i += WORKERS) {
        const [a, r] = variant.pair(w, offset + i);
        const acquired = await send(client, a);
        const released = await send(client, r);
        if (!variant.check(acquired, released)) throw new Error(`${variant.label}: unexpected replies ${String(acquired)} / ${String(released)}`);
      }
    }),
  );
}

/** Microseconds of script time per pair (EVALSHA + FCALL in INFO commandstats since RESETSTAT). */
async function scriptUsPerPair(client: Redis): Promise<number> {
  let usec = 0;
  for (const [field, value] of await redisInfo(client, 'commandstats')) {
    const m = /usec=(\d+)/.exec(value);
    if (m && (field === 'cmdstat_evalsha' || field === 'cmdstat_fcall')) usec += Number(m[1]);
  }
  return usec / PAIRS;
}

async function main(): Promise<void> {
  const machine = machineNote();
  const redis = await startBenchRedis();
  const { client } = redis;
  try {
    const all = await variants(client);
    let offset = 0;
    for (let round = 1; round <= ROUNDS; round++) {
      for (const variant of all) {
        for (const mode of ['pipelined', 'single'] as const) {
          offset += PAIRS;
          await client.call('CONFIG', 'RESETSTAT');
          const cpuBefore = cpuSeconds(redis.pid);
          await (mode === 'pipelined' ? runPipelined(client, variant, offset) : runSingle(client, variant, offset));
          const cpuUs = ((cpuSeconds(redis.pid) - cpuBefore) * 1e6) / PAIRS;
          variant[mode].push(cpuUs);
          if (mode === 'pipelined') variant.scriptUs.push(await scriptUsPerPair(client));
        }
      }
      process.stdout.write(`[bench:redis-cost] round ${round} of ${ROUNDS} done\n`);
    }
    const shipped = all.find((v) => v.label.startsWith('holdfast as shipped'))!;
    const rows = all.map((v) => {
      const versus = v.versus ?? shipped;
      return [
        v.label,
        fixed(median(v.pipelined)),
        fixed(median(v.scriptUs)),
        `${fixed(median(v.pipelined) / median(versus.pipelined), 2)}x`,
        fixed(median(v.single)),
        `${fixed(median(v.single) / median(versus.single), 2)}x`,
      ];
    });
    report(
      'redis-cost.md',
      'npm run bench:redis-cost',
      'Redis CPU per uncontended acquire + release, by part',
      `${PAIRS} pairs per variant and mode, ${ROUNDS} rounds, variants interleaved within each round; medians over the rounds. "Pipelined": batches of ${BATCH} acquires then their ${BATCH} releases, so per-call I/O is shared and the figure is the calls' own CPU. "Single": ${WORKERS} workers, each call waits for its reply (one read and one write per call, as a holdfast server's connection sees at low load). Redis CPU from /proc/<pid>/stat of redis-server (10 ms ticks over ${PAIRS} pairs); script µs from INFO commandstats (EVALSHA, FCALL). Ratios are to holdfast as shipped in the same run (the EVAL hand-off: to the hand-off as shipped).`,
      machine,
      markdownTable(
        [
          'variant (a pair: its two calls)',
          'Redis CPU µs/pair, pipelined',
          'script µs/pair (commandstats)',
          'ratio',
          'Redis CPU µs/pair, single calls',
          'ratio',
        ],
        rows,
      ),
      [],
    );
  } finally {
    await redis.cleanup();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
