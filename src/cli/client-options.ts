// What the client commands share: the server address, the lock request flags, and error output.
import { Command, InvalidArgumentError, Option } from 'commander';
import { status } from '@grpc/grpc-js';
import { HoldfastClient, LeaseLostError, NotAcquiredError } from '../../clients/ts';
import { isServiceError } from '../../clients/ts/rpc';
import { EXIT } from './exit-codes';
import { millis } from './options';

export interface LockFlags {
  addr: string;
  owner: string;
  ttlMs: number;
  waitMs: number;
  shared?: boolean;
  limit: number;
}

function count(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('expected a whole number');
  return n;
}

export function addrOption(): Option {
  return new Option('--addr <host:port>', 'holdfast server address').env('HOLDFAST_ADDR').default('127.0.0.1:50051');
}

/** Adds --addr and the flags of an Acquire or Hold request. */
export function withLockFlags(command: Command): Command {
  return command
    .addOption(addrOption())
    .addOption(new Option('--ttl-ms <ms>', 'lease length (0: the server default)').argParser(millis).default(0))
    .addOption(new Option('--wait-ms <ms>', 'how long to wait for the lock (0: try once)').argParser(millis).default(0))
    .option('--shared', 'take the lock shared (a read lock)')
    .addOption(new Option('--limit <n>', 'semaphore size: up to n holders at once').argParser(count).default(0))
    .addOption(new Option('--owner <owner>', 'who holds it; the same owner re-enters the lock').default(''));
}

/** Runs `fn` with a client for `addr` and closes it afterwards. */
export async function withClient<T>(addr: string, fn: (client: HoldfastClient) => Promise<T>): Promise<T> {
  const client = new HoldfastClient(addr);
  try {
    return await fn(client);
  } finally {
    client.close();
  }
}

/** Prints one line about `err` to stderr and returns the exit code it calls for. */
export function reportError(err: unknown): number {
  if (err instanceof NotAcquiredError) {
    process.stderr.write(`holdfast: ${err.message}\n`);
    return EXIT.NOT_ACQUIRED;
  }
  if (err instanceof LeaseLostError) {
    // `exec` only: the grant came too late to be trusted, so COMMAND never started.
    process.stderr.write(`holdfast: ${err.message}\n`);
    return EXIT.LEASE_LOST;
  }
  if (isServiceError(err)) {
    process.stderr.write(`holdfast: ${status[err.code]}: ${err.details}\n`);
    return EXIT.FAILED;
  }
  process.stderr.write(`holdfast: ${(err as Error).message}\n`);
  return EXIT.FAILED;
}

/** Runs a command's body and exits with the code it returns, or with reportError's. */
export function exitWith(body: () => Promise<number>): Promise<never> {
  return body().then(
    (code) => process.exit(code),
    (err: unknown) => process.exit(reportError(err)),
  );
}
