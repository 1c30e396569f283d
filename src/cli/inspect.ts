import { Command } from 'commander';
import { addrOption, exitWith, withClient } from './client-options';
import { printJson } from './print-json';

export function inspectCommand(): Command {
  return new Command('inspect')
    .description('print the InspectResponse of NAME (holders, waiters, last fencing token) as JSON')
    .argument('<name>', 'lock name')
    .addOption(addrOption())
    .action((name: string, flags: { addr: string }) =>
      exitWith(() =>
        withClient(flags.addr, async (client) => {
          printJson(await client.rpc.inspect({ name }));
          return 0;
        }),
      ),
    );
}
