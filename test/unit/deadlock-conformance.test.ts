// clients/conformance/deadlock.json against the TypeScript SDK's rule (clients/ts/errors.ts
// isDeadlock, which every call's error goes through), with wrong rules as negative controls.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Metadata, status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { DeadlockError, isDeadlock, type ErrorStatus } from '../../clients/ts/errors';

interface Case {
  name: string;
  code: number;
  metadata: Record<string, string>;
  message: string;
  deadlock: boolean;
}
const table = JSON.parse(readFileSync(join(__dirname, '..', '..', 'clients', 'conformance', 'deadlock.json'), 'utf8')) as { cases: Case[] };

function statusOf(c: Case): ErrorStatus {
  const metadata = new Metadata();
  for (const [key, value] of Object.entries(c.metadata)) metadata.set(key, value);
  return { code: c.code, details: c.message, metadata };
}

/** The cases a rule gets wrong. */
const wrongFor = (rule: (error: ErrorStatus) => boolean) => table.cases.filter((c) => rule(statusOf(c)) !== c.deadlock).map((c) => c.name);

describe('deadlock conformance (clients/conformance/deadlock.json)', () => {
  it('the SDK rule agrees with every case', () => {
    expect(table.cases.length).toBeGreaterThanOrEqual(9);
    expect(wrongFor(isDeadlock)).toEqual([]);
  });

  it('a DeadlockError keeps the message, the code and the metadata', () => {
    const c = table.cases[0];
    const error = new DeadlockError('account-a', statusOf(c));
    expect(error).toMatchObject({ name: 'DeadlockError', code: status.ABORTED, details: c.message, message: c.message, lockName: 'account-a' });
    expect(error.metadata?.get('holdfast-reason')).toEqual(['deadlock']);
  });

  it('negative controls: wrong rules disagree with the table', () => {
    expect(wrongFor((e) => e.code === status.ABORTED)).not.toEqual([]);
    expect(wrongFor((e) => e.metadata?.get('holdfast-reason').includes('deadlock') === true)).not.toEqual([]);
    expect(wrongFor((e) => e.code === status.ABORTED && e.details.includes('deadlock: '))).not.toEqual([]);
    expect(wrongFor((e) => e.code === status.ABORTED && e.details.startsWith('deadlock: '))).not.toEqual([]);
  });
});
