// The holdfast command and its subcommands, as commander defines them: run by src/cli.ts, and read
// by scripts/check-docs.mjs, which checks every flag the docs name against these definitions.
import { Command } from 'commander';
import { acquireCommand } from './acquire';
import { execCommand } from './exec';
import { fenceKeyCommand } from './fence-key';
import { hashKeyCommand } from './hash-key';
import { inspectCommand } from './inspect';
import { releaseCommand } from './release';
import { renewCommand } from './renew';
import { serveCommand } from './serve';
import { skipFirstQuarantineCommand } from './skip-first-quarantine';
import { statusCommand } from './status';
import { watchCommand } from './watch';
import { holdfastVersion } from '../version';

export function holdfastProgram(): Command {
  const program = new Command('holdfast')
    .description('holdfast: a distributed lock server over Redis, spoken to with gRPC')
    .version(holdfastVersion(), '-V, --version', "print holdfast's version")
    .showHelpAfterError();
  program.addCommand(serveCommand());
  program.addCommand(execCommand());
  program.addCommand(acquireCommand());
  program.addCommand(releaseCommand());
  program.addCommand(renewCommand());
  program.addCommand(inspectCommand());
  program.addCommand(statusCommand());
  program.addCommand(hashKeyCommand());
  program.addCommand(fenceKeyCommand());
  program.addCommand(watchCommand());
  program.addCommand(skipFirstQuarantineCommand());
  return program;
}
