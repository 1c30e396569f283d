import { Command, Option } from 'commander';
import { exitWith, withClient, withConnectionFlags, type ConnectionFlags } from './client-options';
import { printJson } from './print-json';

export function releaseCommand(): Command {
  return withConnectionFlags(new Command('release'))
    .description('release one hold of a grant and print the ReleaseResponse as JSON')
    .argument('<name>', 'lock name')
    .addOption(new Option('--token <token>', "the grant's token").env('HOLDFAST_TOKEN').makeOptionMandatory())
    .action((name: string, flags: ConnectionFlags & { token: string }) =>
      exitWith(() =>
        withClient(flags, async (client) => {
          printJson(await client.rpc.release({ name, token: flags.token, holdId: '' }));
          return 0;
        }),
      ),
    );
}
