#!/usr/bin/env node
// The holdfast command: wiring only. Each subcommand lives in src/cli/.
import { Command } from 'commander';
import { serveCommand } from './cli/serve';

const program = new Command('holdfast')
  .description('holdfast: a distributed lock server over Redis, spoken to with gRPC')
  .showHelpAfterError();
program.addCommand(serveCommand());

program.parseAsync(process.argv).catch((err) => {
  process.stderr.write(`holdfast: ${(err as Error).message}\n`);
  process.exit(1);
});
