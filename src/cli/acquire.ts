import { Command } from 'commander';
import { acquireRequest, NotAcquiredError } from '@holdfast/client';
import { exitWith, reportError, withClient, withLockFlags, type LockFlags } from './client-options';
import { printJson } from './print-json';

export function acquireCommand(): Command {
  return withLockFlags(new Command('acquire'))
    .description('acquire NAME once (nothing renews it) and print the AcquireResponse as JSON; exit 75 when not granted')
    .argument('<name>', 'lock name')
    .option('--request-id <id>', 'idempotency key: a retry with the same id gets the same grant', '')
    .action((name: string, flags: LockFlags & { requestId: string }) =>
      exitWith(() =>
        withClient(flags, async (client) => {
          const request = acquireRequest(name, flags);
          const res = await client.rpc.acquire(request, flags.waitMs);
          printJson(res);
          return res.acquired ? 0 : reportError(new NotAcquiredError(name, flags.waitMs));
        }),
      ),
    );
}
