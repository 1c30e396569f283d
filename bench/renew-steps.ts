// `npm run bench:renew-steps`: where Redis's CPU goes in one lease renewal (issue 24), with no
// holdfast server: 10 000 live leases on a private redis-server, renewed over and over by
//
//   renew-3 as main had it            one FCALL per lease (its own TIME, two ZSCOREs, ZADD always)
//   renew-3 now                       one FCALL per lease, the rules of includes/renew
//   renew-batch-3, N per call         one FCALL per N leases (N = 1 … 1000)
//   500 per call, cut down            includes/renew with only its first steps, one step more
//                                     each: what each Redis call of a renewal costs
//
// Rounds interleaved; redis-server CPU from /proc per lease renewed, and Redis's time per call
// (INFO commandstats): how long one batch call keeps Redis from everything else.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lockKeys, scriptKeys } from '../src/engine/keys';
import { luaDir } from '../src/redis/scripts';
import { LockLibrary } from '../src/redis/functions';
import { cpuSeconds, fixed, machineNote, markdownTable, median, redisInfo, report, setting, startBenchRedis } from './support';

const ROUNDS = setting('rounds', 'HOLDFAST_BENCH_ROUNDS', 3);
const LEASES = setting('leases', 'HOLDFAST_BENCH_LEASES', 10_000);
const SIZES = [1, 10, 100, 250, 500, 1000];
const STEP_BATCH = 500;
/** Passes over every lease per measurement: /proc counts CPU in 10 ms ticks. */
const PASSES = setting('passes', 'HOLDFAST_BENCH_PASSES', 4);

const RENEW = readFileSync(join(luaDir(), 'includes', 'renew.lua'), 'utf8');
const BODY = RENEW.slice(RENEW.indexOf('local function renewLease'));
const renewLease = (body: string) => `local function renewLease(token, ttl, holdId)\n${body}\nend`;

/** includes/renew cut down to its first steps (each keeps the one before). */
const STEPS: [string, string][] = [
  ['the call and its loop over the leases (one TIME)', renewLease('return 1, ttl')],
  ['+ ZSCORE of the lease', renewLease('local e = leaseExpiry(token)\nreturn 1, e - now')],
  ['+ HGET and decode of the grant (liveGrant)', renewLease('local g, e = liveGrant(token)\nreturn 1, e - now')],
  [
    '+ ZADD',
    renewLease(
      "local g, e = liveGrant(token)\nlocal x = math.max(now + ttl, e)\nif x > e then redis.call('ZADD', holdersKey, x, token) end\nreturn 1, x - now",
    ),
  ],
  ['+ PTTL (keepKeysUntil): includes/renew as shipped', BODY],
  [
    'as main did it (a second ZSCORE, ZADD always)',
    BODY.replace('math.max(now + ttl, current)', 'math.max(now + ttl, leaseExpiry(token))').replace(
      "if expiry > current then redis.call('ZADD', holdersKey, expiry, token) end",
      "redis.call('ZADD', holdersKey, expiry, token)",
    ),
  ],
];

/** The lock library with includes/renew's renewLease replaced by `code` (and renew-3 by `renew3`, when given). */
function libraryWith(code: string, renew3?: string): LockLibrary {
  const dir = mkdtempSync(join(tmpdir(), 'holdfast-bench-lua-'));
  try {
    cpSync(luaDir(), dir, { recursive: true });
    writeFileSync(join(dir, 'includes', 'renew.lua'), RENEW.slice(0, RENEW.indexOf('local function renewLease')) + code);
    if (renew3) writeFileSync(join(dir, 'renew-3.lua'), renew3);
    return new LockLibrary(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** renew-3 as it was before includes/renew: its own reads, a second ZSCORE, ZADD always. */
const OLD_RENEW_3 = `--[[
  KEYS[1] holders    KEYS[2] queue    KEYS[3] data
  ARGV[1] token    ARGV[2] ttl ms    ARGV[3] hold id
  Returns {1, leaseLeft} or {-1, why}
]]
--- @include "includes/begin"
holdersKey, queueKey, dataKey = KEYS[1], KEYS[2], KEYS[3]
local token, ttl, holdId = ARGV[1], tonumber(ARGV[2]), ARGV[3] or ''
local grant = liveGrant(token)
if not grant then
  local own = leaseExpiry(token)
  local othersLive = redis.call('ZCOUNT', holdersKey, '(' .. now, '+inf') - ((own and own > now) and 1 or 0)
  if othersLive > 0 then return { -1, 1 } end
  return { -1, 0 }
end
if holdId ~= '' and not findHold(grant, holdId) then return { -1, 2 } end
if ttl == 0 then ttl = grant.t end
local expiry = math.max(now + ttl, leaseExpiry(token))
redis.call('ZADD', holdersKey, expiry, token)
keepKeysUntil(expiry)
return { 1, expiry - now }`;

async function main(): Promise<void> {
  const machine = machineNote();
  const redis = await startBenchRedis();
  try {
    const shipped = new LockLibrary();
    const old = libraryWith(BODY, OLD_RENEW_3);
    const steps = STEPS.map(([label, code]) => [label, libraryWith(code)] as const);
    for (const library of [shipped, old, ...steps.map(([, l]) => l)]) await library.load(redis.client);
    const keys = Array.from({ length: LEASES }, (_, i) => scriptKeys(lockKeys('bench', `l${i}`), 4));
    const token = (i: number) => `t${i}`.padEnd(22, 'x');
    for (let i = 0; i < LEASES; i += 500) {
      const pipeline = redis.client.pipeline();
      for (let j = i; j < Math.min(LEASES, i + 500); j++) shipped.queue(pipeline, 'acquire', keys[j], [token(j), '', 600_000, 1, 1, '', '', 3000, '']);
      await pipeline.exec();
    }
    const run = async (library: LockLibrary, perCall: number | 'single') => {
      const pipeline = redis.client.pipeline();
      if (perCall === 'single') {
        for (let j = 0; j < LEASES; j++) library.queue(pipeline, 'renew', keys[j].slice(0, 3), [token(j), 600_000, '']);
      } else {
        for (let i = 0; i < LEASES; i += perCall) {
          const k: string[] = [];
          const a: (string | number)[] = [];
          for (let j = i; j < Math.min(LEASES, i + perCall); j++) k.push(keys[j][0], keys[j][1], keys[j][2]), a.push(token(j), 600_000, '');
          library.queue(pipeline, 'renewBatch', k, a);
        }
      }
      const results = (await pipeline.exec()) ?? [];
      const failed = results.find(([err, reply]) => err || (reply as number[])[0] !== 1);
      if (failed) throw failed[0] ?? new Error(`a renewal was refused: ${JSON.stringify(failed[1])}`);
    };
    const cases: [string, () => Promise<void>, number][] = [
      ['renew-3 as main had it, one call per lease', () => run(old, 'single'), LEASES],
      ['renew-3 now, one call per lease', () => run(shipped, 'single'), LEASES],
      ...SIZES.map((n): [string, () => Promise<void>, number] => [`renew-batch-3, ${n} per call`, () => run(shipped, n), Math.ceil(LEASES / n)]),
      ...steps.map(([label, library]): [string, () => Promise<void>, number] => [
        `${STEP_BATCH} per call: ${label}`,
        () => run(library, STEP_BATCH),
        Math.ceil(LEASES / STEP_BATCH),
      ]),
    ];
    const fcallUs = async () => Number(/usec=(\d+)/.exec((await redisInfo(redis.client, 'commandstats')).get('cmdstat_fcall') ?? '')?.[1] ?? 0);
    const cpu = new Map(cases.map(([label]) => [label, [] as number[]]));
    const perLease = new Map(cases.map(([label]) => [label, [] as number[]]));
    const perCall = new Map(cases.map(([label]) => [label, [] as number[]]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const [label, fn, calls] of cases) {
        await fn(); // warm
        const [c0, u0] = [cpuSeconds(redis.pid), await fcallUs()];
        for (let pass = 0; pass < PASSES; pass++) await fn();
        const us = (await fcallUs()) - u0;
        cpu.get(label)!.push(((cpuSeconds(redis.pid) - c0) * 1e6) / (PASSES * LEASES));
        perLease.get(label)!.push(us / (PASSES * LEASES));
        perCall.get(label)!.push(us / (PASSES * calls) / 1000);
      }
    }
    const rounds = (values: number[]) => `${fixed(median(values), 1)} (${values.map((v) => fixed(v, 1)).join(' / ')})`;
    const rows = cases.map(([label]) => [label, rounds(cpu.get(label)!), rounds(perLease.get(label)!), fixed(median(perCall.get(label)!), 2)]);
    const table = markdownTable(
      ['renewal', 'redis-server CPU µs per lease: median (rounds)', 'function µs per lease: median (rounds)', 'Redis ms per call (median)'],
      rows,
    );
    process.stdout.write(`${table}\n`);
    const method =
      `${LEASES} live leases on a private redis-server, each renewed ${PASSES} times per measurement (after a warm-up pass), ${ROUNDS} rounds interleaved. ` +
      "CPU from /proc of redis-server (all of it: the calls, their I/O, the event loop) per lease; the functions' own time from INFO commandstats (usec of FCALL), per lease and per call.";
    report('renew-steps.md', 'npm run bench:renew-steps', 'Where Redis spends a lease renewal', method, machine, table, []);
  } finally {
    await redis.cleanup();
  }
}

main().catch((err) => {
  process.stderr.write(`bench:renew-steps failed: ${(err as Error).stack}\n`);
  process.exit(1);
});
