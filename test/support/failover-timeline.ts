// What a Sentinel failover test saw, in time order, to print when it fails (and to reason about
// when grants may resume): every Sentinel's own events (+sdown, +odown, +elected-leader,
// +switch-master, -failover-abort-..., +tilt), the servers' log lines about Redis and the
// quarantine, a probe of each server (when it stopped and started answering, when it said
// grants were paused and when they were not any more), and whatever the test marks itself.
import { Redis } from 'ioredis';
import type { TestClient } from './client';
import type { ServerProcess } from './server';

export interface TimelineEvent {
  /** Date.now() when it happened (a server's log time, or when the test heard of it). */
  at: number;
  source: string;
  what: string;
}

/** A master change the Sentinels announced (+switch-master), once however many Sentinels said it. */
export interface MasterSwitch {
  at: number;
  from: string;
  to: string;
}

/** A quarantine a server logged: from its log time, for `ms`. */
export interface LoggedQuarantine {
  server: string;
  at: number;
  ms: number;
  why: string;
}

interface ServerLine {
  level: number;
  time: number;
  msg: string;
  ms?: number;
  why?: string;
}

function parseLine(line: string): ServerLine | undefined {
  try {
    const parsed = JSON.parse(line) as ServerLine;
    return typeof parsed.time === 'number' && typeof parsed.msg === 'string' ? parsed : undefined;
  } catch {
    return undefined;
  }
}

export class FailoverTimeline {
  private readonly marks: TimelineEvent[] = [];
  private readonly subscribers: Redis[] = [];
  private readonly servers: { name: string; server: ServerProcess }[] = [];
  private readonly probes: Promise<void>[] = [];
  private probing = true;
  /** The time the printed offsets count from (the kill), 0 until set. */
  zero = 0;

  mark(source: string, what: string, at = Date.now()): void {
    this.marks.push({ at, source, what });
  }

  /** Records every event each Sentinel publishes (its pub/sub, pattern '*'). */
  async watchSentinels(ports: number[]): Promise<void> {
    await Promise.all(
      ports.map(async (port, i) => {
        const sub = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1, connectTimeout: 2000, retryStrategy: () => 200 });
        sub.on('error', () => {});
        this.subscribers.push(sub);
        sub.on('pmessage', (_pattern: string, channel: string, message: string) => this.mark(`sentinel-${i}`, `${channel} ${message}`));
        await sub.psubscribe('*');
      }),
    );
  }

  /** Reads the server's log lines about Redis and the quarantine when the timeline is printed. */
  watchServer(name: string, server: ServerProcess): void {
    this.servers.push({ name, server });
  }

  /**
   * Asks `client` every `everyMs` how a lock stands (Inspect), and marks when the server stops
   * answering, answers again, says grants are paused (grants_resume_in_ms) and when they are not.
   */
  probe(name: string, client: TestClient, lock: string, everyMs = 250): void {
    let answering = true;
    let pausedUntil = 0;
    this.probes.push(
      (async () => {
        while (this.probing) {
          const info = await client.inspect({ name: lock }, 2000).catch((err: { code?: number; details?: string }) => err);
          const now = Date.now();
          if (!('grantsResumeInMs' in info)) {
            if (answering) this.mark(name, `not answering: ${info.code} ${info.details ?? ''}`.trim(), now);
            answering = false;
          } else {
            if (!answering) this.mark(name, 'answering again', now);
            answering = true;
            const resumeIn = Number(info.grantsResumeInMs);
            // A new pause, or one pushed back by more than the probe's own jitter: a (re)started quarantine.
            if (resumeIn > 0 && (pausedUntil === 0 || now + resumeIn > pausedUntil + 2000)) {
              this.mark(name, `grants paused for ${resumeIn} ms (until +${this.offset(now + resumeIn)})`, now);
            }
            if (resumeIn === 0 && pausedUntil !== 0) this.mark(name, 'grants no longer paused', now);
            pausedUntil = resumeIn > 0 ? Math.max(pausedUntil, now + resumeIn) : 0;
          }
          await new Promise((r) => setTimeout(r, everyMs));
        }
      })(),
    );
  }

  /** The distinct master changes the Sentinels announced, first time each was heard. */
  switches(): MasterSwitch[] {
    const seen = new Map<string, MasterSwitch>();
    for (const e of this.sorted(this.marks)) {
      const m = /^\+switch-master \S+ (\S+) (\d+) (\S+) (\d+)$/.exec(e.what);
      if (!m) continue;
      const [from, to] = [`${m[1]}:${m[2]}`, `${m[3]}:${m[4]}`];
      if (!seen.has(`${from}>${to}`)) seen.set(`${from}>${to}`, { at: e.at, from, to });
    }
    return [...seen.values()];
  }

  /** The quarantines each watched server logged (`quarantine: no new grants for N s`). */
  quarantines(): LoggedQuarantine[] {
    return this.servers.flatMap(({ name, server }) =>
      server.logs
        .map(parseLine)
        .filter((l): l is ServerLine => !!l && l.msg.startsWith('quarantine:') && typeof l.ms === 'number')
        .map((l) => ({ server: name, at: l.time, ms: l.ms!, why: l.why ?? '' })),
    );
  }

  /** Everything, in time order, with offsets from `zero`. */
  format(): string {
    const logged = this.servers.flatMap(({ name, server }) =>
      server.logs
        .map(parseLine)
        .filter((l): l is ServerLine => !!l && (l.level >= 40 || /Redis|redis|reachable|connected/.test(l.msg)))
        .map((l) => ({ at: l.time, source: name, what: l.msg })),
    );
    return this.sorted([...this.marks, ...logged])
      .map((e) => `${this.offset(e.at).padStart(9)}  ${e.source.padEnd(12)} ${e.what}`)
      .join('\n');
  }

  /** Stops the probes and the Sentinel subscriptions; never rejects. */
  async close(): Promise<void> {
    this.probing = false;
    await Promise.allSettled(this.probes);
    for (const sub of this.subscribers) sub.disconnect();
  }

  private offset(at: number): string {
    return `${((at - this.zero) / 1000).toFixed(3)} s`;
  }

  private sorted(events: TimelineEvent[]): TimelineEvent[] {
    return [...events].sort((x, y) => x.at - y.at);
  }
}
