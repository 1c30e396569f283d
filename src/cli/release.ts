import { Command, Option } from 'commander';
import { addrOption, exitWith, withClient } from './client-options';
import { printJson } from './print-json';

export function releaseCommand(): Command {
  return new Command('release')
    .description('release one hold of a grant and print the ReleaseResponse as JSON')
    .argument('<name>', 'lock name')
    .addOption(new Option('--token <token>', "the grant's token").env('HOLDFAST_TOKEN').makeOptionMandatory())
    .addOption(addrOption())
    .action((name: string, flags: { addr: string; token: string }) =>
      exitWith(() =>
        withClient(flags.addr, async (client) => {
          printJson(await client.rpc.release({ name, token: flags.token, holdId: '' }));
          return 0;
        }),
      ),
    );
}
