import { Command } from 'commander';
import type { LockInfo } from '../../clients/ts';
import { exitWith, withClient, withConnectionFlags, type ConnectionFlags } from './client-options';
import { formatTable } from './table';

const HEADER = ['LOCK', 'OWNER', 'MODE', 'FENCING', 'TTL LEFT', 'HOLDS', 'WAITERS'];

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`;
}

/** One row a holder; a free lock gets one row that says so. */
function rowsOf(info: LockInfo): string[][] {
  const waiters = String(info.waiters);
  if (info.holders.length === 0) return [[info.name, '-', 'free', '-', '-', '-', waiters]];
  return info.holders.map((holder) => [
    info.name,
    holder.owner || '-',
    holder.mode,
    String(holder.fencingToken),
    seconds(holder.ttlMs),
    String(holder.holdCount),
    waiters,
  ]);
}

export function statusCommand(): Command {
  return withConnectionFlags(new Command('status'))
    .description('print a table of the holders and waiters of each NAME')
    .argument('<name...>', 'lock names')
    .action((names: string[], flags: ConnectionFlags) =>
      exitWith(() =>
        withClient(flags, async (client) => {
          const infos = await Promise.all(names.map((name) => client.inspect(name)));
          const pausedMs = Math.max(0, ...infos.map((info) => info.grantsResumeInMs));
          if (pausedMs > 0) {
            const until = new Date(Date.now() + pausedMs).toISOString();
            process.stdout.write(`quarantine after a Redis failover: no new grants for ${seconds(pausedMs)} (until ${until})\n`);
          }
          process.stdout.write(formatTable([HEADER, ...infos.flatMap(rowsOf)]));
          return 0;
        }),
      ),
    );
}
