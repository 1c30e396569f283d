// The fuzzer's checker lets UNAVAILABLE through only as the server's own words for Redis trouble.
import { status } from '@grpc/grpc-js';
import { expect, it } from 'vitest';
import type { Outcome } from '../fuzz/calls';
import { checkOutcome } from '../fuzz/checks';

const unavailable = (details: string): Outcome => ({ code: status.UNAVAILABLE, details, cancelled: false, deadline: false, events: [], ms: 1 });

it('accepts a Redis timeout and a master not yet confirmed, and refuses any other UNAVAILABLE (negative control)', () => {
  expect(checkOutcome('acquire', unavailable('Redis is unavailable: Command timed out'), 10)).toBeUndefined();
  expect(checkOutcome('acquire', unavailable('lock "a": the server has not yet confirmed which Redis master it writes to'), 10)).toBeUndefined();
  expect(checkOutcome('acquire', unavailable('No connection established'), 10)).toMatch(/is not one acquire may answer/);
  expect(checkOutcome('getServerStats', unavailable('Redis is unavailable'), 10)).toMatch(/is not one getServerStats may answer/);
});

it("accepts a deadlock's ABORTED from a waiting call before any event, and refuses any other ABORTED there (negative control)", () => {
  const aborted = (details: string): Outcome => ({ code: status.ABORTED, details, cancelled: false, deadline: false, events: [], ms: 1 });
  const deadlock = 'deadlock: owner "alice" waits for lock "a", held by owner "bob"; owner "bob" waits for lock "b", held by owner "alice"';
  expect(checkOutcome('acquire', aborted(deadlock), 10)).toBeUndefined();
  expect(checkOutcome('hold', aborted(deadlock), 10)).toBeUndefined();
  expect(checkOutcome('acquire', aborted('lock "a" was lost'), 10)).toMatch(/is not one acquire may answer/);
  expect(checkOutcome('hold', aborted('lock "a" was lost'), 10)).toMatch(/ended ABORTED after no events/);
  expect(checkOutcome('release', aborted(deadlock), 10)).toMatch(/is not one release may answer/);
});
