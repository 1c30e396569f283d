#!/usr/bin/env node
// The holdfast command: wiring only. Each subcommand lives in src/cli/.
import { Command } from 'commander';
import { acquireCommand } from './cli/acquire';
import { execCommand } from './cli/exec';
import { hashKeyCommand } from './cli/hash-key';
import { inspectCommand } from './cli/inspect';
import { releaseCommand } from './cli/release';
import { renewCommand } from './cli/renew';
import { serveCommand } from './cli/serve';
import { skipFirstQuarantineCommand } from './cli/skip-first-quarantine';
import { statusCommand } from './cli/status';
import { watchCommand } from './cli/watch';

const program = new Command('holdfast')
  .description('holdfast: a distributed lock server over Redis, spoken to with gRPC')
  .showHelpAfterError();
program.addCommand(serveCommand());
program.addCommand(execCommand());
program.addCommand(acquireCommand());
program.addCommand(releaseCommand());
program.addCommand(renewCommand());
program.addCommand(inspectCommand());
program.addCommand(statusCommand());
program.addCommand(hashKeyCommand());
program.addCommand(watchCommand());
program.addCommand(skipFirstQuarantineCommand());

program.parseAsync(process.argv).catch((err) => {
  process.stderr.write(`holdfast: ${(err as Error).message}\n`);
  process.exit(1);
});
