// Grants per second over the last minutes: one counter per second in a ring, so that counting a
// grant is one increment and the series is read only when a dashboard asks. The engine's observer
// (src/engine/observer.ts) tells it of each grant, as it tells the metrics.
import { NO_OBSERVER, type EngineObserver } from '../engine/observer';

export const RATE_WINDOW_S = 300;

export class GrantRate {
  private readonly counts = new Array<number>(RATE_WINDOW_S).fill(0);
  private second = 0; // the whole second of performance.now() that counts[second % RATE_WINDOW_S] holds

  constructor(private readonly now: () => number = () => performance.now()) {
    this.second = this.currentSecond();
  }

  /** Counts one grant now. */
  granted(): void {
    this.advance();
    this.counts[this.second % RATE_WINDOW_S]++;
  }

  /** Grants in each of the last RATE_WINDOW_S whole seconds, oldest first (the second under way not included). */
  series(): number[] {
    this.advance();
    const out: number[] = [];
    for (let s = this.second - RATE_WINDOW_S + 1; s < this.second; s++) out.push(this.counts[((s % RATE_WINDOW_S) + RATE_WINDOW_S) % RATE_WINDOW_S]);
    return out;
  }

  private currentSecond(): number {
    return Math.floor(this.now() / 1000);
  }

  /** Zeroes the seconds that passed with no grant. */
  private advance(): void {
    const now = this.currentSecond();
    for (let s = this.second + 1; s <= Math.min(now, this.second + RATE_WINDOW_S); s++) this.counts[s % RATE_WINDOW_S] = 0;
    this.second = now;
  }
}

/** The engine observer that counts each grant (a queued waiter's hand-off too) in `rate`. */
export function countGrants(rate: GrantRate): EngineObserver {
  return {
    ...NO_OBSERVER,
    acquireEnd: (_probe, outcome) => {
      if (outcome === 'granted') rate.granted();
    },
  };
}
