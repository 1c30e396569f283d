// Runs a command for `holdfast exec` while a lease is held, and stops it when the lease is lost.
import { spawn, type ChildProcess } from 'node:child_process';
import { constants } from 'node:os';
import type { Lease } from '@holdfast/client';
import { EXIT } from './exit-codes';

export interface RunOptions {
  argv: string[];
  /** Time between SIGTERM and SIGKILL when the lease is lost. */
  graceMs: number;
  /** Receives the function that signals the running command (for forwarding SIGINT/SIGTERM). */
  onStart(signal: (sig: NodeJS.Signals) => void): void;
}

/**
 * The command leads its own process group, so a lost lease stops everything it started (a
 * shell's children too), not only its first process.
 */
function signalGroup(child: ChildProcess, sig: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, sig);
  } catch {
    child.kill(sig);
  }
}

function exitCodeOf(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null) return code;
  return 128 + (signal ? constants.signals[signal] : 0);
}

/** The lease's deadline (the SDK's conservative end, counted from when Hold was sent) is passed as epoch milliseconds. */
function leaseEnv(lease: Lease): NodeJS.ProcessEnv {
  return {
    ...process.env,
    HOLDFAST_LOCK_NAME: lease.name,
    HOLDFAST_FENCING_TOKEN: String(lease.fencingToken),
    HOLDFAST_LEASE_EXPIRES_AT: String(Math.floor(lease.expiresAt)),
  };
}

/** Resolves with the exit code for holdfast: the command's own, or EXIT.LEASE_LOST when it had to be stopped. */
export function runWhileHeld(lease: Lease, options: RunOptions): Promise<number> {
  const [file, ...args] = options.argv;
  const child = spawn(file, args, { stdio: 'inherit', detached: true, env: leaseEnv(lease) });
  let stopped = false;
  let killer: NodeJS.Timeout | undefined;
  const stop = () => {
    stopped = true;
    process.stderr.write(`holdfast: ${(lease.signal.reason as Error).message}; stopping the command\n`);
    signalGroup(child, 'SIGTERM');
    killer = setTimeout(() => signalGroup(child, 'SIGKILL'), options.graceMs);
  };
  return new Promise<number>((resolve) => {
    child.once('error', (err: NodeJS.ErrnoException) => {
      if (child.pid !== undefined) return; // a failed kill(); 'exit' still comes
      process.stderr.write(`holdfast: cannot run ${file}: ${err.message}\n`);
      resolve(err.code === 'ENOENT' ? EXIT.NOT_FOUND : EXIT.CANNOT_RUN);
    });
    child.once('spawn', () => {
      options.onStart((sig) => signalGroup(child, sig));
      if (lease.signal.aborted) stop();
      else lease.signal.addEventListener('abort', stop, { once: true });
    });
    child.once('exit', (code, signal) => resolve(stopped ? EXIT.LEASE_LOST : exitCodeOf(code, signal)));
  }).finally(() => {
    clearTimeout(killer);
    lease.signal.removeEventListener('abort', stop);
  });
}
