// The victim rule and the message of a deadlock (src/engine/deadlocks.ts): plain functions.
import { describe, expect, it } from 'vitest';
import { type CycleEdge, deadlockMessage, youngest } from '../../src/engine/deadlocks';

const edge = (owner: string, name: string, holder: string, since: number, waiterId = `s.${owner}`): CycleEdge => ({ owner, name, holder, since, waiterId });

describe('deadlock victim and message', () => {
  it('picks the youngest wait, then the larger waiter id, whatever edge the cycle starts at', () => {
    const cycle = [edge('A', 'x', 'B', 100), edge('B', 'y', 'C', 300, 's.1'), edge('C', 'z', 'A', 300, 's.2')];
    expect(youngest(cycle).owner).toBe('C');
    expect(youngest([cycle[2], cycle[0], cycle[1]]).owner).toBe('C');
  });

  it('starts at the victim, names each lock and holder, and stops naming after eight edges', () => {
    const cycle = [edge('A', 'x', 'B', 100), edge('B', 'y', 'A', 200)];
    expect(deadlockMessage(cycle, cycle[1])).toBe(
      'deadlock: owner "B" waits for lock "y", held by owner "A"; owner "A" waits for lock "x", held by owner "B". ' +
        'This wait (owner "B" on lock "y") was ended to break the cycle: it is the youngest wait in it',
    );
    const long = Array.from({ length: 12 }, (_, i) => edge(`o${i}`, `l${i}`, `o${(i + 1) % 12}`, i));
    const message = deadlockMessage(long, long[11]);
    expect(message).toContain('owner "o11" waits for lock "l11"');
    expect(message).toContain('and 4 more edges back to owner "o11"');
    expect(message).not.toContain('lock "l7"');
  });
});
