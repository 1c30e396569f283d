// The failover epoch and the quarantine. The server learns which master it writes to (its
// `run_id`, which changes when another node is promoted and when Redis restarts) on every
// reconnect and every poll. When it changes, grants made on the old master may be gone from the
// new one while their clients still hold them, so the new master is quarantined: no new grant
// or hand-off until the longest lease any server could have granted (--max-ttl-ms) plus a
// margin has passed. Renewals and releases of grants that survived go on.
//
// A server that meets a master it has never seen asks Redis: the epoch record (a hash under
// `<prefix>:epoch`) names the master that grants were last made under and when its quarantine
// ends (Redis clock). The record is written, on the connection grants go on, before any grant
// is made under that master, and is refreshed while the server runs, with a TTL of the
// quarantine length: it outlives every lease granted under it. So:
//   - record names this master and its quarantine is over: no grant can have been lost; serve.
//   - record names this master, quarantine not over: wait out what is left of it.
//   - record names another master, or is missing (a new master whose record was lost with the
//     grants, a restart without persistence, or a new deployment): quarantine in full.
import type { Cluster, Redis } from 'ioredis';

export interface FailoverWatchOptions {
  /** The connection grants go on: the master it talks to is the one that matters. */
  redis: Redis | Cluster;
  /** Connections whose loss means the master may have changed (grants pause until checked). */
  watched: (Redis | Cluster)[];
  epochKey: string;
  /** The longest lease any server could have granted plus a margin. */
  quarantineMs: number;
  pollMs?: number;
  onChange?: () => void;
  /** Failures to check, to be logged once each. */
  onError?: (err: unknown) => void;
  /** Told when a quarantine starts, for the log. */
  onQuarantine?: (why: string, ms: number) => void;
  /**
   * Whether a master met for the first time took over from another one this server saw (a Cluster
   * shard's promoted replica, met as a new node): it then counts as a failover (lastFailoverAt).
   */
  tookOver?: boolean;
  /**
   * The first master met is known to hold every grant ever made on it (a new embedded data dir,
   * or an embedded Redis that fsyncs every write): only a quarantine its record says is still
   * running is waited out.
   */
  startsComplete?: boolean;
}

export class FailoverWatch {
  /** The run_id of the master last identified (undefined until the first check). */
  runId?: string;
  /** Whether the master behind the grant connection was identified since it last (re)connected. */
  private verified = false;
  /** performance.now() when grants may be made again. */
  private until = 0;
  /** Redis clock (ms) when the quarantine ends, as written in the epoch record. */
  private untilRedisMs = 0;
  private why = '';
  private checking?: Promise<void>;
  private readonly timer: NodeJS.Timeout;
  lastFailoverAt = -Infinity;

  private readonly onClose = () => this.unverify();
  private readonly onReady = () => void this.check();

  constructor(private readonly options: FailoverWatchOptions) {
    for (const connection of options.watched) {
      connection.on('close', this.onClose);
      connection.on('ready', this.onReady);
    }
    this.timer = setInterval(() => void this.check(), options.pollMs ?? 500);
    this.timer.unref();
    void this.check();
  }

  get isVerified(): boolean {
    return this.verified;
  }

  blocked(): string | null {
    if (!this.verified) return 'the server has not yet confirmed which Redis master it writes to';
    if (performance.now() < this.until) return this.why;
    return null;
  }

  resumeInMs(): number {
    if (!this.verified) return 100;
    return Math.max(0, Math.ceil(this.until - performance.now()));
  }

  /** Epoch ms when grants resume (0 when they may be made now; an estimate while unverified). */
  resumesAt(): number {
    const ms = this.resumeInMs();
    return ms > 0 ? Date.now() + ms : 0;
  }

  private unverify(): void {
    if (!this.verified) return;
    this.verified = false;
    this.options.onChange?.();
  }

  private check(): Promise<void> {
    this.checking ??= this.identify()
      .catch((err) => {
        this.unverify();
        this.options.onError?.(err);
      })
      .finally(() => {
        this.checking = undefined;
      });
    return this.checking;
  }

  private async identify(): Promise<void> {
    const { redis, epochKey, quarantineMs } = this.options;
    const [info, time, record] = await Promise.all([redis.info('server'), redis.time(), redis.hgetall(epochKey)]);
    const runId = /^run_id:(\w+)/m.exec(String(info))?.[1];
    if (!runId) throw new Error('INFO server did not name a run_id');
    const redisNow = Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000);
    const wasBlocked = this.blocked() !== null;
    if (this.runId === undefined) {
      if (this.options.startsComplete) this.quarantineUntil(Number(record.until ?? 0), redisNow, 'the quarantine after the last Redis failover is not over');
      else if (record.master === runId) this.quarantineUntil(Number(record.until ?? 0), redisNow, 'the quarantine after the last Redis failover is not over');
      else if (this.options.tookOver) {
        this.lastFailoverAt = performance.now();
        this.quarantineUntil(redisNow + quarantineMs, redisNow, 'a replica was promoted to master of this shard');
      } else
        this.quarantineUntil(
          redisNow + quarantineMs,
          redisNow,
          record.master ? 'Redis failed over before this server started' : 'this server cannot tell from Redis that no grant was lost (no epoch record)',
        );
    } else if (runId !== this.runId) {
      this.lastFailoverAt = performance.now();
      this.quarantineUntil(redisNow + quarantineMs, redisNow, 'Redis failed over to another master (or restarted)');
    }
    this.runId = runId;
    // Written before any grant under this master is made on this connection, and kept alive.
    const ttl = Math.max(this.untilRedisMs - redisNow, 0) + quarantineMs;
    await redis.multi().hset(epochKey, 'master', runId, 'until', String(this.untilRedisMs)).pexpire(epochKey, ttl).exec();
    this.verified = true;
    if (wasBlocked !== (this.blocked() !== null)) this.options.onChange?.();
  }

  private quarantineUntil(untilRedisMs: number, redisNow: number, why: string): void {
    const ms = untilRedisMs - redisNow;
    if (ms <= 0) return;
    this.untilRedisMs = Math.max(this.untilRedisMs, untilRedisMs);
    this.until = Math.max(this.until, performance.now() + ms);
    this.why = `new grants are paused for ${Math.ceil(ms / 1000)} s: ${why}, and a grant made on the old master may still be held`;
    this.options.onQuarantine?.(why, ms);
    // Look again when it ends, so health turns SERVING on time.
    setTimeout(() => this.options.onChange?.(), ms + 1).unref();
  }

  close(): void {
    clearInterval(this.timer);
    for (const connection of this.options.watched) {
      connection.off('close', this.onClose);
      connection.off('ready', this.onReady);
    }
  }
}
