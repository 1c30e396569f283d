// `status --watch`'s frame names each lock's kind as the dashboard does.
import { expect, it } from 'vitest';
import { LeaseLengths, renderOverview } from '../../src/cli/overview-view';
import { Mode } from '../../src/engine/types';
import type { LockView } from '../../src/overview/lock-page';

const holder = (mode: Mode, fencingToken: string) => ({ owner: 'o', fencingToken, ttlMs: 5000, holdCount: 1, mode, value: '' });

function frameOf(locks: LockView[]): string {
  const backend = { serving: true, redisReachable: true, quarantine: null };
  return renderOverview({ backend, grantsPerSecond: [1], page: { locks, next: '0', listable: true }, error: null }, 'test', new LeaseLengths());
}

function kindColumn(frame: string, name: string): string[] {
  return frame
    .split('\n')
    .filter((line) => line.startsWith(`${name} `))
    .map((line) => line.split(/\s{2,}/)[2]);
}

it('names a semaphore with its places taken, a shared lock as shared (read), a plain one as exclusive', () => {
  const lock = (name: string, limit: number, holders: ReturnType<typeof holder>[]) => ({ name, limit, holders, waiters: 0 });
  const frame = frameOf([
    lock('sem', 3, [holder(Mode.EXCLUSIVE, '1'), holder(Mode.EXCLUSIVE, '2')]),
    lock('read', 1, [holder(Mode.SHARED, '3')]),
    lock('plain', 1, [holder(Mode.EXCLUSIVE, '4')]),
  ]);
  expect(
    frame
      .split('\n')
      .find((l) => l.startsWith('LOCK'))
      ?.split(/\s{2,}/)[2],
  ).toBe('KIND');
  expect(kindColumn(frame, 'sem')).toEqual(['semaphore, 2 of 3', 'semaphore, 2 of 3']);
  expect(kindColumn(frame, 'read')).toEqual(['shared (read)']);
  expect(kindColumn(frame, 'plain')).toEqual(['exclusive']);
});
