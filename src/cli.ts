#!/usr/bin/env node
// The holdfast command: wiring only. Each subcommand lives in src/cli/, gathered in src/cli/program.ts.
import { holdfastProgram } from './cli/program';

holdfastProgram()
  .parseAsync(process.argv)
  .catch((err) => {
    process.stderr.write(`holdfast: ${(err as Error).message}\n`);
    process.exit(1);
  });
