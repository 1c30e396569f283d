// What the client commands share: the server address and how to reach it securely, the lock
// request flags, and error output.
import { type Command, InvalidArgumentError, Option } from 'commander';
import { status } from '@grpc/grpc-js';
import { checkAddress, HoldfastClient, InvalidAddressError, isServiceError, LeaseLostError, NotAcquiredError, type ConnectionSecurity } from '@holdfast/client';
import { readOptionFile } from '../tls/option-file';
import { EXIT } from './exit-codes';
import { count, millis } from './options';

export interface ConnectionFlags {
  addr: string;
  tls?: boolean;
  tlsCa?: string;
  tlsCert?: string;
  tlsKey?: string;
  tlsServerName?: string;
  apiKey?: string;
}

export interface LockFlags extends ConnectionFlags {
  owner: string;
  ttlMs: number;
  waitMs: number;
  shared?: boolean;
  limit: number;
  value: string;
}

/** Parses --addr: host:port, checked as the SDK does, so a bad one is refused naming the option. */
function address(value: string): string {
  try {
    return checkAddress(value);
  } catch (err) {
    if (err instanceof InvalidAddressError) throw new InvalidArgumentError(err.reason);
    throw err;
  }
}

/** Adds --addr and the TLS and API key flags. */
export function withConnectionFlags(command: Command): Command {
  return command
    .addOption(new Option('--addr <host:port>', 'holdfast server address').env('HOLDFAST_ADDR').argParser(address).default('127.0.0.1:50051'))
    .addOption(new Option('--tls', "connect with TLS, trusting the system's CAs (implied by --tls-ca, --tls-cert)").env('HOLDFAST_TLS'))
    .addOption(new Option('--tls-ca <file>', "PEM CA that signed the server's certificate").env('HOLDFAST_TLS_CA'))
    .addOption(new Option('--tls-cert <file>', 'mutual TLS: PEM client certificate').env('HOLDFAST_TLS_CERT'))
    .addOption(new Option('--tls-key <file>', "mutual TLS: the client certificate's PEM private key").env('HOLDFAST_TLS_KEY'))
    .addOption(new Option('--tls-server-name <name>', "the name the server's certificate must carry, when not the --addr host").env('HOLDFAST_TLS_SERVER_NAME'))
    .addOption(new Option('--api-key <key>', 'sent as authorization: Bearer <key> (prefer the env variable: arguments show in ps)').env('HOLDFAST_API_KEY'));
}

const readPem = (option: string, file: string | undefined) => (file === undefined ? undefined : readOptionFile(option, file));

/** The TLS and key settings the flags ask for, with the PEM files read. */
export function connectionSecurity(flags: ConnectionFlags): ConnectionSecurity {
  if (!flags.tlsCert !== !flags.tlsKey) throw new Error('--tls-cert and --tls-key go together');
  const tls = flags.tls || flags.tlsCa || flags.tlsCert || flags.tlsServerName;
  return {
    apiKey: flags.apiKey || undefined,
    tls: tls
      ? {
          ca: readPem('--tls-ca', flags.tlsCa),
          cert: readPem('--tls-cert', flags.tlsCert),
          key: readPem('--tls-key', flags.tlsKey),
          serverName: flags.tlsServerName,
        }
      : undefined,
  };
}

/** Adds --addr, the TLS and key flags, and the flags of an Acquire or Hold request. */
export function withLockFlags(command: Command): Command {
  return withConnectionFlags(command)
    .addOption(new Option('--ttl-ms <ms>', 'lease length (0: the server default)').argParser(millis).default(0))
    .addOption(new Option('--wait-ms <ms>', 'how long to wait for the lock (0: try once)').argParser(millis).default(0))
    .option('--shared', 'take the lock shared (a read lock)')
    .addOption(new Option('--limit <n>', 'semaphore size: up to n holders at once').argParser(count).default(0))
    .addOption(new Option('--owner <owner>', 'who holds it; the same owner re-enters the lock').default(''))
    .addOption(new Option('--value <value>', 'a value the grant publishes to watchers (at most 1024 bytes), e.g. this host').default(''));
}

/** Runs `fn` with a client for the flags' server and closes it afterwards. */
export async function withClient<T>(flags: ConnectionFlags, fn: (client: HoldfastClient) => Promise<T>): Promise<T> {
  const security = connectionSecurity(flags);
  // grpc-js sends an IP address as the TLS server name, and Node warns of that (DEP0123) on
  // stderr; a CLI user dialling an IP can do nothing about it.
  if (security.tls) process.noDeprecation = true;
  const client = new HoldfastClient(flags.addr, security);
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
