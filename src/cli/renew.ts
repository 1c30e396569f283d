import { Command, Option } from 'commander';
import { exitWith, withClient, withConnectionFlags, type ConnectionFlags } from './client-options';
import { millis } from './options';
import { printJson } from './print-json';

export function renewCommand(): Command {
  return withConnectionFlags(new Command('renew'))
    .description("extend a grant's lease and print the RenewResponse as JSON")
    .argument('<name>', 'lock name')
    .addOption(new Option('--token <token>', "the grant's token").env('HOLDFAST_TOKEN').makeOptionMandatory())
    .addOption(new Option('--ttl-ms <ms>', "new lease from now (0: the grant's lease length)").argParser(millis).default(0))
    .action((name: string, flags: ConnectionFlags & { token: string; ttlMs: number }) =>
      exitWith(() =>
        withClient(flags, async (client) => {
          printJson(await client.rpc.renew({ name, token: flags.token, ttlMs: String(flags.ttlMs) }));
          return 0;
        }),
      ),
    );
}
