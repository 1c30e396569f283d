// A fence store in this process's memory. It forgets everything on restart: use it only for a
// resource whose own state lives in the same process (and is lost with it).
import type { FenceDecision, FenceStore } from './store';

export class MemoryFenceStore implements FenceStore {
  private readonly newest = new Map<string, bigint>();

  /** Synchronous inside: nothing can run between the compare and the record. */
  async check(lock: string, token: bigint): Promise<FenceDecision> {
    const newest = this.newest.get(lock);
    if (newest !== undefined && token < newest) return { accepted: false, newest };
    this.newest.set(lock, token);
    return { accepted: true, newest: token };
  }
}
