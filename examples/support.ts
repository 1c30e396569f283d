// What the examples share: a private redis-server and holdfast servers on free loopback ports
// (the benchmarks' own helpers), `--short` for the quick run CI makes, and percentiles.
import { startBenchRedis, startHoldfast, type BenchRedis, type HoldfastProcess } from '../bench/support';

export { quantile } from '../bench/support';

/** CI runs every example with --short: the same checks, a fraction of the time. */
export const SHORT = process.argv.includes('--short');

export interface Stack {
  redis: BenchRedis;
  servers: HoldfastProcess[];
  stop(): Promise<void>;
}

/** One redis-server and `count` holdfast servers on it. */
export async function startStack(count = 1): Promise<Stack> {
  const redis = await startBenchRedis();
  // HOLDFAST_EXAMPLE_SERVER_NODE_ARGS=--cpu-prof profiles the servers, as bench/'s runs can.
  const nodeArgs = process.env.HOLDFAST_EXAMPLE_SERVER_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const servers = await Promise.all(Array.from({ length: count }, () => startHoldfast(redis.url, [], nodeArgs)));
  return {
    redis,
    servers,
    async stop() {
      await Promise.all(servers.map((s) => s.stop()));
      await redis.cleanup();
    },
  };
}

/** Runs `main`, prints what it throws, and exits 1 on a failed check. */
export function run(main: () => Promise<void>): void {
  main().then(
    () => process.exit(0),
    (err) => {
      console.error(`FAILED: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}

export function check(ok: boolean, what: string): void {
  if (!ok) throw new Error(what);
  console.log(`ok: ${what}`);
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
