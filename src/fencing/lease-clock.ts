// Lease ends in Unix milliseconds by Redis's clock. The engine reports a lease as performance.now()
// just before its script was sent (leaseStart) plus ttlMs: the lease in Redis ends no earlier. A
// TIME read from Redis, sent at `sent` and answered at `received`, was taken no later than
// `received`, so Redis's clock at any instant p is at least redisTime + (p - received): that lower
// bound turns leaseStart + ttlMs into a stated end that is never later than the end in Redis.
// Read again every REFRESH_MS, so drift between the two clocks (and a step of Redis's) stays small.

export const REFRESH_MS = 10_000;
/** How long a server's start waits for the first read (Redis down at start: its own clock meanwhile). */
const FIRST_READ_MS = 2_000;

export interface LeaseClock {
  /** Unix ms by this clock at the performance.now() instant `at`. */
  unixMsAt(at: number): number;
  stop(): void;
}

/** The server's own wall clock: only where no Redis clock can be read (Redlock's independent masters). */
export const serverClock: LeaseClock = {
  unixMsAt: (at) => performance.timeOrigin + at,
  stop: () => {},
};

export interface RedisClockEvents {
  /** Redis's time could not be read: the last offset (or, before the first, the server's clock) stays in use. */
  onReadFailed(err: unknown): void;
}

export class RedisClock implements LeaseClock {
  /** Redis Unix ms minus performance.now(); the server's clock until Redis's is read. */
  private offset = performance.timeOrigin;
  private readonly timer: NodeJS.Timeout;
  private failing = false;

  private constructor(
    private readonly readRedisTime: () => Promise<number>,
    private readonly events: RedisClockEvents,
  ) {
    this.timer = setInterval(() => void this.read(), REFRESH_MS).unref();
  }

  /** Starts it and reads Redis's time once (so the first fences already state Redis's time), waiting at most FIRST_READ_MS. */
  static async start(readRedisTime: () => Promise<number>, events: RedisClockEvents): Promise<RedisClock> {
    const clock = new RedisClock(readRedisTime, events);
    let bound: NodeJS.Timeout | undefined;
    await Promise.race([clock.read(), new Promise((resolve) => (bound = setTimeout(resolve, FIRST_READ_MS)))]);
    clearTimeout(bound);
    return clock;
  }

  unixMsAt(at: number): number {
    return this.offset + at;
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private async read(): Promise<void> {
    try {
      const redisMs = await this.readRedisTime();
      this.offset = redisMs - performance.now();
      this.failing = false;
    } catch (err) {
      if (!this.failing) this.events.onReadFailed(err);
      this.failing = true;
    }
  }
}

/** Redis's clock where the lock state is in one Redis; the server's own in Redlock mode (each master has its clock). */
export async function leaseClockOf(readRedisTime: (() => Promise<number>) | undefined, events: RedisClockEvents): Promise<LeaseClock> {
  return readRedisTime ? RedisClock.start(readRedisTime, events) : serverClock;
}
