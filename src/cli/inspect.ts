import { Command } from 'commander';
import { exitWith, withClient, withConnectionFlags, type ConnectionFlags } from './client-options';
import { printJson } from './print-json';

export function inspectCommand(): Command {
  return withConnectionFlags(new Command('inspect'))
    .description('print the InspectResponse of NAME (holders, waiters, last fencing token) as JSON')
    .argument('<name>', 'lock name')
    .action((name: string, flags: ConnectionFlags) =>
      exitWith(() =>
        withClient(flags, async (client) => {
          printJson(await client.rpc.inspect({ name }));
          return 0;
        }),
      ),
    );
}
