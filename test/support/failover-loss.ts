// How a Hold whose grant a failover lost must end. The server can only say FAILOVER if it reaches
// the new master and looks before the lease runs out; the lease ends no sooner than its send time
// + ttl - the watchdog's margin (ttl/10). When the failover outlasted that on a loaded machine, the
// lease runs out first, and BACKEND_UNAVAILABLE is as honest an answer.
import { expect } from 'vitest';
import { LostReason } from '../../gen/holdfast/v1/lock';

/**
 * `reachableAt`: when the server could first reach the new master (as the test saw it);
 * `slackMs`: what the server may still need after that to look (renewal tick, checks after a reconnect).
 */
export function expectFailoverLoss(code: LostReason, hold: { sentAt: number; ttlMs: number }, reachableAt: number, slackMs: number): void {
  const inTime = reachableAt + slackMs < hold.sentAt + hold.ttlMs * 0.9;
  console.log(`failover loss: the new master was reachable ${inTime ? 'in time' : 'too late'} to look; the Hold ended with ${LostReason[code]}`);
  if (inTime) expect(code).toBe(LostReason.LOST_REASON_FAILOVER);
  else expect([LostReason.LOST_REASON_BACKEND_UNAVAILABLE, LostReason.LOST_REASON_FAILOVER]).toContain(code);
}
