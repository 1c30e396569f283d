import { Command, Option } from 'commander';
import { constants } from 'node:os';
import { exitWith, withClient, withLockFlags, type LockFlags } from './client-options';
import { millis } from './options';
import { runWhileHeld } from './run-while-held';

const FORWARDED: NodeJS.Signals[] = ['SIGINT', 'SIGTERM'];

async function exec(name: string, argv: string[], flags: LockFlags & { graceMs: number }): Promise<number> {
  // Before COMMAND starts, SIGINT/SIGTERM stop the wait; afterwards they are passed on to COMMAND.
  const interrupted = new AbortController();
  let forward: ((sig: NodeJS.Signals) => void) | undefined;
  const onSignal = (sig: NodeJS.Signals) => (forward ? forward(sig) : interrupted.abort(sig));
  for (const sig of FORWARDED) process.on(sig, onSignal);
  const interruptedCode = () => 128 + constants.signals[interrupted.signal.reason as NodeJS.Signals];
  try {
    return await withClient(flags, (client) =>
      client.withLock(
        name,
        (lease) => {
          if (interrupted.signal.aborted) return interruptedCode();
          return runWhileHeld(lease, { argv, graceMs: flags.graceMs, onStart: (signal) => (forward = signal) });
        },
        { ...flags, signal: interrupted.signal },
      ),
    );
  } catch (err) {
    if (interrupted.signal.aborted) return interruptedCode();
    throw err;
  } finally {
    for (const sig of FORWARDED) process.off(sig, onSignal);
  }
}

export function execCommand(): Command {
  return withLockFlags(new Command('exec'))
    .description(
      'run COMMAND while holding NAME (through a Hold stream); stop it if the lease is lost.\n' +
        'COMMAND gets HOLDFAST_LOCK_NAME, HOLDFAST_FENCING_TOKEN and HOLDFAST_LEASE_EXPIRES_AT (epoch ms, the conservative end).\n' +
        "Exit code: COMMAND's (128+N if it died of signal N); 75 not acquired in time;\n" +
        '76 lease lost (COMMAND stopped, or never started because the grant came too late);\n' +
        '127 COMMAND not found; 126 COMMAND could not be run; 1 any other error.',
    )
    .summary('run COMMAND while holding NAME; stop it if the lease is lost')
    .usage('[options] NAME -- COMMAND [ARGS...]')
    .argument('<name>', 'lock name')
    .argument('<command...>', 'the command to run and its arguments')
    .addOption(new Option('--grace-ms <ms>', 'after SIGTERM on a lost lease, wait this long before SIGKILL').argParser(millis).default(5000))
    .action((name: string, argv: string[], flags: LockFlags & { graceMs: number }) => exitWith(() => exec(name, argv, flags)));
}
