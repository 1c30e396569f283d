// The runs `npm run chaos` and the vitest file make: the default configuration under every fault
// class, and the negative control, a deliberately broken configuration the checker must catch.
import { FAULT_CLASSES, type FaultClass } from './faults';
import type { ChaosOptions } from './run';

export const ALL_FAULTS = Object.keys(FAULT_CLASSES) as FaultClass[];
/** What one redis-server can be put through (a failover needs Sentinel). */
export const SINGLE_REDIS_FAULTS = ALL_FAULTS.filter((c) => !FAULT_CLASSES[c].sentinel);
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
    faults: SINGLE_REDIS_FAULTS,
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
export const SHORT_FAULTS: FaultClass[] = [
  'client-stop-cut',
  'client-kill',
  'server-kill',
  'server-stop',
  'redis-stop',
  'redis-restart-aof',
  'redis-restart-empty',
];

/**
 * One Redis restarted with and without its data, under the default safety (docs/failover.md,
 * "Safe by default"): a restart is treated as a failover, and no grant is made until every lease
 * the old Redis may have granted has run out. Its claim: a restart without persistence is safe too.
 */
export function quarantineRun(durationS: number, seed: number, overrides: Partial<ChaosOptions> = {}): ChaosOptions {
  const options = defaultRun(durationS, seed, {
    label: 'one Redis restarted, default safety',
    faults: ['redis-restart-empty', 'redis-restart-aof'],
    ...overrides,
  });
  return { ...options, safe: options.faults };
}

/**
 * A master, two replicas and three Sentinels, under issue 9's lost-write failover. The lease is
 * 8 s, well over what a failover takes (about 3 s), so that a lost grant's holder still counts on
 * its lease when the promoted master lets someone else have the lock. With `--sync-replicas auto`
 * every grant and renewal is on every replica before it is reported: claimed safe. Without it:
 * not safe, the negative control of the pair.
 */
export function sentinelRun(durationS: number, seed: number, syncReplicas: boolean, overrides: Partial<ChaosOptions> = {}): ChaosOptions {
  const options = defaultRun(durationS, seed, {
    label: `Sentinel failover${syncReplicas ? ', default safety' : ' with --unsafe-no-failover-safety'}`,
    faults: ['redis-failover'],
    ttlMs: 8000,
    // A third of the holds long enough to outlast a failover, and more locks, some of them free
    // when a grant is lost: a lost grant of a lock that was held before is hidden by the lost
    // release before it (the promoted replica still has the earlier holder).
    thinkScaleMs: 3000,
    longShare: 0.3,
    exclusiveLocks: 12,
    topology: 'sentinel',
    // --sync-replicas wants the master to refuse writes no replica can see (README); the default is 0.
    nodeArgs: ['--min-replicas-to-write', syncReplicas ? '1' : '0'],
    ...overrides,
  });
  // Default safety (the quarantine and --sync-replicas auto behind Sentinel) against the opt-out.
  return { ...options, serverArgs: syncReplicas ? [] : ['--unsafe-no-failover-safety'], safe: syncReplicas ? ['redis-failover'] : [] };
}
