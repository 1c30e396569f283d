// Where a server's CPU went, by part: reads the .cpuprofile files a benchmark's server wrote
// (HOLDFAST_BENCH_SERVER_NODE_ARGS="--cpu-prof --cpu-prof-dir=DIR") and gives each sample to the
// part of the innermost frame it can name: protobuf decode and encode (gen/), the engine
// (src/engine, src/backend), storage (src/redis, src/redlock), the Redis client (ioredis),
// gRPC and HTTP/2 (grpc-js, Node's http2), the transport's own code, metrics (prom-client,
// src/observability/metrics), traces (OpenTelemetry, src/observability/tracing), the garbage
// collector. Node's own frames and @bufbuild/protobuf's reader and writer count for their caller;
// a sample with no named frame at all is Node's runtime (event loop, timers, socket reads).
//
//   node bench/dist/bench/cpu-split.js [--from-ms=2000] [--to-ms=N] [--timeline] [--cpu-us=N] FILE.cpuprofile...
// Only samples from --from-ms to --to-ms after the profile began count (leave out the server's
// start-up, or keep only a benchmark's measured window: --timeline prints busy ms per second to
// find it); --cpu-us (the benchmark's server CPU per operation) adds a µs-per-operation column.
import { readFileSync } from 'node:fs';
import { fixed, markdownTable } from './support';

interface CallFrame {
  functionName: string;
  url: string;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** The parts, in the order the table lists them. */
const PARTS = [
  'decode (protobuf, gen/)',
  'encode (protobuf, gen/)',
  'gRPC and HTTP/2 (grpc-js, node:http2)',
  'transport (src/transport)',
  'engine (src/engine, src/backend)',
  'storage (src/redis, src/redlock)',
  'Redis client (ioredis)',
  'metrics (prom-client, src/observability/metrics)',
  'traces (OpenTelemetry, src/observability/tracing)',
  'other server code (src/)',
  'other libraries',
  'garbage collector',
  'Node runtime (event loop, timers, socket reads)',
] as const;
type Part = (typeof PARTS)[number];

/** The part a frame names, or undefined: it counts for its caller. */
function partOf({ functionName, url }: CallFrame): Part | undefined {
  if (functionName === '(garbage collector)') return 'garbage collector';
  if (url.includes('/gen/holdfast/')) return /decode|fromBinary/i.test(functionName) ? 'decode (protobuf, gen/)' : 'encode (protobuf, gen/)';
  if (url.includes('/node_modules/')) {
    if (url.includes('/@bufbuild/protobuf/')) return undefined;
    if (url.includes('/@grpc/')) return 'gRPC and HTTP/2 (grpc-js, node:http2)';
    if (/\/node_modules\/(ioredis|redis-parser|redis-errors|denque|cluster-key-slot|standard-as-callback)\//.test(url)) return 'Redis client (ioredis)';
    if (url.includes('/prom-client/') || url.includes('/tdigest/') || url.includes('/bintrees/')) return 'metrics (prom-client, src/observability/metrics)';
    if (url.includes('/@opentelemetry/')) return 'traces (OpenTelemetry, src/observability/tracing)';
    return 'other libraries';
  }
  if (url.startsWith('node:internal/http2')) return 'gRPC and HTTP/2 (grpc-js, node:http2)';
  const src = /\/dist\/src\/([^/]+)\/?([^/]*)/.exec(url);
  if (!src) return undefined;
  const [, dir, file] = src;
  if (dir === 'transport') return 'transport (src/transport)';
  if (dir === 'engine' || dir === 'backend') return 'engine (src/engine, src/backend)';
  if (dir === 'redis' || dir === 'redlock') return 'storage (src/redis, src/redlock)';
  if (dir === 'observability')
    return file.startsWith('tracing') ? 'traces (OpenTelemetry, src/observability/tracing)' : 'metrics (prom-client, src/observability/metrics)';
  return 'other server code (src/)';
}

const IDLE = new Set(['(idle)', '(root)']);

/** Milliseconds of samples per part from `fromMs` to `toMs`, leaving out idle time; `timeline`: busy ms per second. */
function split(profile: Profile, fromMs: number, toMs: number, timeline: number[]): Map<Part, number> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  // Each node's part, found once: its own frame's, else its caller's.
  const part = new Map<number, Part | null>();
  const resolve = (id: number): Part | null => {
    const known = part.get(id);
    if (known !== undefined) return known;
    const node = byId.get(id)!;
    const up = parent.get(id);
    const found = partOf(node.callFrame) ?? (up === undefined ? null : resolve(up));
    part.set(id, found);
    return found;
  };
  const totals = new Map<Part, number>();
  let at = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i] / 1000;
    const node = byId.get(profile.samples[i])!;
    if (IDLE.has(node.callFrame.functionName)) continue;
    const ms = (profile.timeDeltas[i + 1] ?? 0) / 1000;
    const second = Math.floor(at / 1000);
    timeline[second] = (timeline[second] ?? 0) + ms;
    if (at < fromMs || at > toMs) continue;
    const p = (node.callFrame.functionName === '(program)' ? null : resolve(node.id)) ?? 'Node runtime (event loop, timers, socket reads)';
    totals.set(p, (totals.get(p) ?? 0) + ms);
  }
  return totals;
}

function main(): void {
  const flags = new Map<string, string>();
  const files: string[] = [];
  for (const arg of process.argv.slice(2)) {
    const flag = /^--([a-z-]+)(?:=(.*))?$/.exec(arg);
    if (flag) flags.set(flag[1], flag[2] ?? '');
    else files.push(arg);
  }
  if (files.length === 0) throw new Error('name one or more .cpuprofile files');
  const fromMs = Number(flags.get('from-ms') ?? 2000);
  const toMs = Number(flags.get('to-ms') ?? Infinity);
  const cpuUs = flags.has('cpu-us') ? Number(flags.get('cpu-us')) : undefined;
  const totals = new Map<Part, number>();
  for (const file of files) {
    const timeline: number[] = [];
    for (const [p, ms] of split(JSON.parse(readFileSync(file, 'utf8')) as Profile, fromMs, toMs, timeline)) totals.set(p, (totals.get(p) ?? 0) + ms);
    if (flags.has('timeline')) process.stdout.write(`${file}: busy ms in each second: ${Array.from(timeline, (ms) => Math.round(ms ?? 0)).join(' ')}\n`);
  }
  const busy = [...totals.values()].reduce((a, b) => a + b, 0);
  const rows = PARTS.map((p) => {
    const share = (totals.get(p) ?? 0) / busy;
    return [p, `${fixed(share * 100, 1)} %`, ...(cpuUs === undefined ? [] : [fixed(share * cpuUs, 0)])];
  });
  const header = ['part', 'share of busy samples', ...(cpuUs === undefined ? [] : ['µs per operation'])];
  process.stdout.write(`${markdownTable(header, rows)}\n\nbusy: ${fixed(busy / 1000, 2)} s of samples in ${files.length} profile(s)\n`);
}

main();
