// The runs `npm run chaos` and the vitest file make: the default configuration under every fault
// class, and the negative control, a deliberately broken configuration the checker must catch.
import { FAULT_CLASSES, type FaultClass } from './faults';
import type { ChaosOptions } from './run';

export const ALL_FAULTS = Object.keys(FAULT_CLASSES) as FaultClass[];
export const SAFE_FAULTS = ALL_FAULTS.filter((c) => FAULT_CLASSES[c].claimedSafe);

export function defaultRun(durationS: number, seed: number, overrides: Partial<ChaosOptions> = {}): ChaosOptions {
  return {
    label: 'default configuration',
    durationS,
    seed,
    ttlMs: 1500,
    workers: 8,
    loops: 3,
    replicas: 2,
    faults: ALL_FAULTS,
    releaseOnDisconnect: false,
    careless: 0,
    keepaliveMs: 1000,
    ...overrides,
  };
}

/**
 * Servers with --release-on-disconnect (a holder's lock is freed the moment its stream ends), and
 * clients that ignore their lease and skip the fence. Paused, cut-off holders must then overlap
 * their successors (held-after-grant), and their late writes must drop their successors' appends.
 */
export function negativeControl(durationS: number, seed: number, overrides: Partial<ChaosOptions> = {}): ChaosOptions {
  const options = defaultRun(durationS, seed, { label: 'negative control', faults: ['client-stop-cut'], releaseOnDisconnect: true, ...overrides });
  return { ...options, careless: options.workers };
}

/** The short run's fault classes: one of each kind of process holdfast claims safety for, restarts included. */
export const SHORT_FAULTS: FaultClass[] = ['client-stop-cut', 'client-kill', 'server-kill', 'server-stop', 'redis-stop', 'redis-restart-aof'];

/**
 * One Redis with --failover-quarantine (README "Failover and guarantees"): a restart, even an empty
 * one, is treated as a failover, and no grant is made until every lease the old Redis may have
 * granted has run out. Its claim: a restart without persistence is safe too.
 */
export function quarantineRun(durationS: number, seed: number, overrides: Partial<ChaosOptions> = {}): ChaosOptions {
  const options = defaultRun(durationS, seed, { label: 'one Redis with --failover-quarantine', faults: ['redis-restart-empty', 'redis-restart-aof'], ...overrides });
  const ttl = String(options.ttlMs);
  return { ...options, serverArgs: ['--failover-quarantine', '--default-ttl-ms', ttl, '--max-ttl-ms', ttl], safe: options.faults };
}
