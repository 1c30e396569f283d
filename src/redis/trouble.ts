// Redis trouble as an operator and a client meet it: the address and the cause in words, never
// ioredis's own wording. Logged once when it starts (at start-up too), then at a backed-off rate
// while it lasts, and once when Redis is back. Clients' UNAVAILABLE says the same.
import type { Cluster, Redis } from 'ioredis';

export interface TroubleLog {
  warn(fields: object, message: string): void;
  info(fields: object, message: string): void;
}

/** The first reminder while trouble lasts, then each one twice as late, up to the last. */
const REMIND_AFTER_MS = [5_000, 10_000, 20_000, 40_000, 60_000];

const CAUSES: Record<string, string> = {
  ECONNREFUSED: 'connection refused (ECONNREFUSED): nothing listens on that port',
  ENOTFOUND: 'host name not found (ENOTFOUND)',
  EAI_AGAIN: 'host name lookup failed for now (EAI_AGAIN)',
  ETIMEDOUT: 'no answer within the connect timeout (ETIMEDOUT)',
  ECONNRESET: 'the connection was reset (ECONNRESET)',
  EHOSTUNREACH: 'host unreachable (EHOSTUNREACH)',
  ENETUNREACH: 'network unreachable (ENETUNREACH)',
  EPIPE: 'the connection broke (EPIPE)',
};

/** What went wrong, in words, from an error ioredis or node reported. */
export function causeInWords(err: unknown): string {
  const e = err as { code?: string; message?: string } | undefined;
  const message = String(e?.message ?? err ?? 'unknown error');
  if (e?.code && CAUSES[e.code]) return CAUSES[e.code];
  if (/^(WRONGPASS|NOAUTH)\b/.test(message)) return `authentication failed: Redis said "${message.replace(/\.$/, '')}" (check the user and password)`;
  if (/^NOPERM\b/.test(message)) return `the Redis user lacks a permission: ${message}`;
  if (/ssl|tls|certificate|CERT_|self[- ]signed/i.test(`${e?.code ?? ''} ${message}`))
    return `TLS handshake failed: ${message}${e?.code ? ` (${e.code})` : ''}`;
  if (/connect ETIMEDOUT|^connect timeout/i.test(message)) return CAUSES.ETIMEDOUT;
  if (/Command timed out/i.test(message)) return 'Redis did not answer within 1 s';
  if (/Stream isn't writeable|Connection is closed|enableOfflineQueue/i.test(message)) return 'the server is not connected to Redis';
  if (/^(LOADING)\b/.test(message)) return 'Redis is loading its data';
  if (/^(MASTERDOWN|READONLY)\b/.test(message)) return `Redis is not a writable master now (${message.split(' ')[0]})`;
  if (/^CLUSTERDOWN\b/.test(message)) return 'the Redis Cluster is down (CLUSTERDOWN)';
  if (/^NOREPLICAS\b/.test(message)) return 'the master has too few replicas to accept writes (NOREPLICAS)';
  return message;
}

/** Watches a connection, logs its trouble, and describes it for clients. */
export class RedisTrouble {
  private down = false;
  private everUp = false;
  private since = 0;
  private cause?: string;
  private reminder?: NodeJS.Timeout;
  private reminders = 0;
  private closing = false;

  constructor(
    /** Where Redis is, as an operator names it: "Redis at 127.0.0.1:6379" (no password). */
    readonly label: string,
    private readonly log: TroubleLog,
  ) {}

  watch(client: Redis | Cluster): void {
    client.on('error', (err: unknown) => this.failed(err));
    client.on('ready', () => this.ready());
    client.on('close', () => this.closed());
  }

  /** The server is stopping: a closed connection is no news. */
  stopping(): void {
    this.closing = true;
    clearTimeout(this.reminder);
  }

  /** "Redis at X is unavailable: cause", for a client's UNAVAILABLE. */
  describe(fallback?: unknown): string {
    const cause = this.down && this.cause ? this.cause : fallback !== undefined ? causeInWords(fallback) : 'the server is not connected to it';
    return `${this.label} is unavailable: ${cause}`;
  }

  private failed(err: unknown): void {
    if (this.closing) return;
    if (!this.down) this.wentDown();
    const first = this.cause === undefined;
    this.cause = causeInWords(err);
    if (first)
      this.log.warn(
        { redis: this.label, cause: this.cause },
        `${this.everUp ? 'lost' : 'cannot reach'} ${this.label}: ${this.cause}; answering UNAVAILABLE until it is back`,
      );
  }

  private closed(): void {
    if (this.closing || this.down) return;
    this.wentDown();
    // The error (if any) comes with the close or with the first reconnect attempt: say it then.
    setTimeout(() => {
      if (this.down && this.cause === undefined && !this.closing) {
        this.cause = 'the connection closed';
        this.log.warn({ redis: this.label, cause: this.cause }, `lost ${this.label}: ${this.cause}; answering UNAVAILABLE until it is back`);
      }
    }, 1500).unref();
  }

  private wentDown(): void {
    this.down = true;
    this.cause = undefined;
    this.since = performance.now();
    this.reminders = 0;
    this.scheduleReminder();
  }

  private scheduleReminder(): void {
    clearTimeout(this.reminder);
    const wait = REMIND_AFTER_MS[Math.min(this.reminders, REMIND_AFTER_MS.length - 1)];
    this.reminder = setTimeout(() => {
      if (!this.down || this.closing) return;
      this.reminders++;
      const forS = Math.round((performance.now() - this.since) / 1000);
      this.log.warn({ redis: this.label, cause: this.cause, downForS: forS }, `still cannot reach ${this.label} after ${forS} s: ${this.cause ?? 'no answer'}`);
      this.scheduleReminder();
    }, wait);
    this.reminder.unref();
  }

  private ready(): void {
    clearTimeout(this.reminder);
    if (this.down) {
      const afterS = Math.round((performance.now() - this.since) / 100) / 10;
      this.log.info({ redis: this.label, downForS: afterS }, `${this.label} is reachable again after ${afterS} s`);
    } else if (!this.everUp) {
      this.log.info({ redis: this.label }, `connected to ${this.label}`);
    }
    this.down = false;
    this.everUp = true;
    this.cause = undefined;
  }
}

/** "Redis at host:port" for a URL (never its password), Sentinels or Cluster seeds. */
export function redisLabel(target: { url: string } | { clusterNodes: string[] } | { sentinels: string[]; masterName: string }): string {
  if ('url' in target) {
    try {
      const u = new URL(target.url);
      return `Redis at ${u.host || u.pathname}${u.protocol === 'rediss:' ? ' (TLS)' : ''}`;
    } catch {
      return 'Redis';
    }
  }
  if ('sentinels' in target) return `Redis master "${target.masterName}" (Sentinels ${target.sentinels.join(',')})`;
  return `Redis Cluster (${target.clusterNodes.join(',')})`;
}
