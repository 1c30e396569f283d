import { Command, Option } from 'commander';
import { RedisBinaryMissing } from '../redis/embedded';
import { DataDirInUse } from '../redis/data-dir-lock';
import { ListenError } from '../net/listen';
import type { SyncReplicas } from '../redis/replica-acks';
import { startServer } from '../server';
import { DEFAULT_LIMITS } from '../transport/limits';
import { QUARANTINE_MARGIN_MS, SAFE_MAX_TTL_MS, UNSAFE_FLAG } from '../config/safety';
import { addEnvVars, ConfigError, EXIT_BAD_CONFIG } from '../config/env';
import type { ServeConfig } from '../config/schema';
import { Credentials } from '../auth/credentials';
import type { RedisSecurity } from '../redis/connect';
import { readOptionFile, TlsFilesError } from '../tls/option-file';
import { count, millis, wholeNumber } from './options';
import { routeGrpcLogs, serverLogger } from './logger';
import { announceListening, runsWorkers, runWorkers, workerCount } from './workers';
import { protectedModeRefusal } from './protected-mode';
import { FenceKeyError, loadSigningKey, loadVerifyKeys } from '../fencing/keys';
import { FenceRing } from '../fencing/ring';

function refuseToStart(message: string): never {
  process.stderr.write(`holdfast: ${message}\n`);
  process.exit(EXIT_BAD_CONFIG);
}

/**
 * What cannot be had at start (redis-server missing, the data dir or a port in use): one line,
 * exit 1. Anything else is thrown on (cli.ts prints it).
 */
function refuseToRun(err: unknown): never {
  if (!(err instanceof RedisBinaryMissing || err instanceof DataDirInUse || err instanceof ListenError)) throw err;
  process.stderr.write(`holdfast: ${err.message}\n`);
  process.exit(1);
}

/** The TLS files to serve with, or undefined for plaintext; refuses a half-given pair. */
function tlsFiles(opts: { tlsCert?: string; tlsKey?: string; tlsClientCa?: string; tlsReloadCheckMs: number }) {
  if (!opts.tlsCert && !opts.tlsKey && !opts.tlsClientCa) return undefined;
  if (!opts.tlsCert || !opts.tlsKey) refuseToStart('--tls-cert and --tls-key go together (and --tls-client-ca needs both)');
  return { certFile: opts.tlsCert, keyFile: opts.tlsKey, clientCaFile: opts.tlsClientCa, reloadCheckMs: opts.tlsReloadCheckMs };
}

interface RedisSecurityFlags {
  redisTls: boolean;
  redisTlsCa?: string;
  redisUsername?: string;
  redisPassword?: string;
  redisSentinelUsername?: string;
  redisSentinelPassword?: string;
}

function redisSecurity(opts: RedisSecurityFlags): RedisSecurity {
  return {
    tls: opts.redisTls,
    ca: opts.redisTlsCa ? readOptionFile('--redis-tls-ca', opts.redisTlsCa) : undefined,
    username: opts.redisUsername,
    password: opts.redisPassword,
    sentinelUsername: opts.redisSentinelUsername,
    sentinelPassword: opts.redisSentinelPassword,
  };
}

/** --http-listen, or --metrics-listen, its first name; two different addresses are refused. */
function httpListen(opts: { httpListen?: string; metricsListen?: string }): string | undefined {
  if (opts.httpListen && opts.metricsListen && opts.httpListen !== opts.metricsListen) {
    refuseToStart(`--http-listen ${opts.httpListen} and --metrics-listen ${opts.metricsListen} name one listener: give one of them`);
  }
  return opts.httpListen ?? opts.metricsListen;
}

/** The fence keys, read before anything starts: a bad file refuses the start, naming the flag and the file. */
function fenceRing(opts: { fenceSigningKey?: string; fenceVerifyKeys?: string }): FenceRing | undefined {
  if (!opts.fenceSigningKey && !opts.fenceVerifyKeys) return undefined;
  try {
    const signing = opts.fenceSigningKey ? loadSigningKey(opts.fenceSigningKey) : undefined;
    return new FenceRing(signing, opts.fenceVerifyKeys ? loadVerifyKeys(opts.fenceVerifyKeys) : []);
  } catch (err) {
    if (err instanceof FenceKeyError) refuseToStart(err.message);
    throw err;
  }
}

/** Ends the process this long after SIGTERM/SIGINT even if something hangs. */
const EXIT_DEADLINE_MS = 10_000;

function syncReplicas(value: string): SyncReplicas {
  if (value === 'auto') return 'auto';
  return wholeNumber(value, 'replicas', 0, 'auto');
}

/** The checked settings; a bad one ends the process with one line and exit 2. */
async function settingsOrExit(command: Command): Promise<ServeConfig> {
  // Loaded here, not with the command: client commands never pay for zod and yaml.
  const { printableConfig, resolveServeConfig } = await import('../config/load');
  try {
    const resolved = resolveServeConfig(command);
    if (resolved.config.printConfig) process.stdout.write(printableConfig(resolved));
    return resolved.config;
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`holdfast: ${err.message}\n`);
    process.exit(EXIT_BAD_CONFIG);
  }
}

export function serveCommand(): Command {
  const command = new Command('serve')
    .description('run the lock server (with a private redis-server child unless --redis is given)')
    .addOption(new Option('--listen <host:port>', 'gRPC listen address').env('HOLDFAST_LISTEN').default('127.0.0.1:50051'))
    .addOption(new Option('--tls-cert <file>', 'serve TLS with this PEM certificate (chain); re-read when it changes').env('HOLDFAST_TLS_CERT'))
    .addOption(new Option('--tls-key <file>', "the certificate's PEM private key").env('HOLDFAST_TLS_KEY'))
    .addOption(new Option('--tls-client-ca <file>', 'mutual TLS: require a client certificate signed by this PEM CA').env('HOLDFAST_TLS_CLIENT_CA'))
    .addOption(
      new Option('--tls-reload-check-ms <ms>', 'how often the TLS files are checked for change')
        .env('HOLDFAST_TLS_RELOAD_CHECK_MS')
        .argParser(millis)
        .default(5000),
    )
    .addOption(
      new Option('--insecure', 'allow a non-loopback --listen address without TLS or API keys (protected mode off)').env('HOLDFAST_INSECURE').default(false),
    )
    .addOption(
      new Option('--fence-signing-key <file>', "sign every grant's fence with this Ed25519 private key (PEM PKCS#8, mode 0600: holdfast fence-key new)"),
    )
    .addOption(new Option('--fence-verify-keys <file>', 'a JWK set of further public keys to publish beside the signing key (rotation)'))
    .addOption(new Option('--redis <url>', 'Redis URL; omit to start a private redis-server').env('HOLDFAST_REDIS_URL'))
    .addOption(
      new Option('--redis-cluster <host:port,...>', 'seed nodes of a Redis Cluster, instead of --redis')
        .env('HOLDFAST_REDIS_CLUSTER')
        .conflicts('redis')
        .argParser((v) =>
          v
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean),
        ),
    )
    .addOption(
      new Option('--redis-sentinels <host:port,...>', 'Redis Sentinels to ask for the master (with --redis-master), instead of --redis')
        .env('HOLDFAST_REDIS_SENTINELS')
        .conflicts(['redis', 'redisCluster'])
        .argParser((v) =>
          v
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean),
        ),
    )
    .addOption(
      new Option(
        '--redlock <redis-url,...>',
        'independent Redis masters (3 or 5): Redlock mode, each grant needs a majority of them (exclusive locks only); instead of --redis',
      )
        .env('HOLDFAST_REDLOCK')
        .conflicts(['redis', 'redisCluster', 'redisSentinels', 'failoverQuarantine'])
        .argParser((v) =>
          v
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean),
        ),
    )
    .addOption(
      new Option('--redlock-node-timeout-ms <ms>', 'how long one Redlock master may take to answer (its vote is lost after)').argParser(millis).default(100),
    )
    .addOption(
      new Option(
        '--redlock-trust-restarts',
        'the Redlock masters fsync every write (appendfsync always), so a restarted one votes again at once instead of sitting out --max-ttl-ms',
      )
        .env('HOLDFAST_REDLOCK_TRUST_RESTARTS')
        .default(false),
    )
    .addOption(
      new Option('--redis-tls', 'connect to Redis (and Sentinels) over TLS; rediss:// and --redis-tls-ca imply it').env('HOLDFAST_REDIS_TLS').default(false),
    )
    .addOption(new Option('--redis-tls-ca <file>', "PEM CA to verify Redis's certificate with (default: the system's)").env('HOLDFAST_REDIS_TLS_CA'))
    .addOption(new Option('--redis-username <user>', 'Redis ACL user, when the URL names none').env('HOLDFAST_REDIS_USERNAME'))
    .addOption(
      new Option('--redis-password <password>', 'Redis password, when the URL has none (prefer the env variable: arguments show in ps)').env(
        'HOLDFAST_REDIS_PASSWORD',
      ),
    )
    .addOption(new Option('--redis-sentinel-username <user>', "the Sentinels' own ACL user").env('HOLDFAST_REDIS_SENTINEL_USERNAME'))
    .addOption(
      new Option('--redis-sentinel-password <password>', "the Sentinels' own password (prefer the env variable)").env('HOLDFAST_REDIS_SENTINEL_PASSWORD'),
    )
    .addOption(new Option('--redis-master <name>', 'the master name the Sentinels monitor').env('HOLDFAST_REDIS_MASTER').default('mymaster'))
    .addOption(
      new Option(
        '--sync-replicas <n|auto>',
        'replicas that must acknowledge every grant and renewal (WAIT) before it is reported; auto: every replica the master lists (the default behind Sentinel; 0 elsewhere)',
      )
        .env('HOLDFAST_SYNC_REPLICAS')
        .argParser(syncReplicas)
        .default(0),
    )
    .addOption(
      new Option('--sync-timeout-ms <ms>', 'how long a grant or renewal waits for those acknowledgements (at most 900)').argParser(millis).default(500),
    )
    .addOption(new Option('--allow-min-replicas-zero', `with ${UNSAFE_FLAG}: start even when the master's min-replicas-to-write is 0 (warns)`).default(false))
    .addOption(
      new Option(
        '--failover-quarantine',
        'on by default (kept for old configs): after Redis fails over or restarts and may have lost grants, make no new grant until every lease the old master may have granted has run out (--max-ttl-ms + --quarantine-margin-ms)',
      )
        .env('HOLDFAST_FAILOVER_QUARANTINE')
        .default(false),
    )
    .addOption(
      new Option(
        UNSAFE_FLAG,
        'give up the failover guarantee for availability: no quarantine after a Redis restart or failover, no replica acknowledgement behind Sentinel, min-replicas-to-write 0 allowed; a lock may then be granted while an earlier holder still counts its lease valid (docs/failover.md)',
      )
        .env('HOLDFAST_UNSAFE_NO_FAILOVER_SAFETY')
        .default(false),
    )
    .addOption(
      new Option(
        '--max-ttl-ms <ms>',
        'the longest lease this server grants or renews; it sizes the quarantine after a Redis restart that may have lost grants (all servers on one Redis should agree)',
      )
        .argParser(millis)
        .default(SAFE_MAX_TTL_MS),
    )
    .addOption(new Option('--quarantine-margin-ms <ms>', 'added to --max-ttl-ms for the quarantine').argParser(millis).default(QUARANTINE_MARGIN_MS))
    .addOption(new Option('--data-dir <dir>', 'where the embedded redis-server keeps its data').env('HOLDFAST_DATA_DIR').default('.holdfast'))
    .addOption(new Option('--default-ttl-ms <ms>', 'lease when a request gives ttl_ms 0').argParser(millis).default(30_000))
    .addOption(new Option('--max-hold-ms <ms>', 'longest any Hold stream keeps its lock (0: no cap)').argParser(millis).default(0))
    .addOption(new Option('--lock-delay-ms <ms>', "keep a lock closed this long after a vanished Hold holder's lease has run out").argParser(millis).default(0))
    .addOption(
      new Option(
        '--release-on-disconnect',
        "free a Hold's lock the moment its stream ends however it ends (faster after a crash; a paused or cut-off holder may then believe it holds a lock another client has)",
      )
        .env('HOLDFAST_RELEASE_ON_DISCONNECT')
        .default(false),
    )
    .addOption(new Option('--keepalive-time-ms <ms>', 'HTTP/2 ping interval to detect dead peers').argParser(millis).default(10_000))
    .addOption(new Option('--keepalive-timeout-ms <ms>', 'how long a ping may go unanswered').argParser(millis).default(5_000))
    .addOption(new Option('--deadline-margin-ms <ms>', "stop waiting this long before a call's deadline").argParser(millis).default(50))
    .addOption(
      new Option('--deadlock-timeout-ms <ms>', 'a wait this long looks for a cycle of waits among owners and ends one wait in it (0: off; docs/deadlocks.md)')
        .argParser(millis)
        .default(1000),
    )
    .addOption(new Option('--key-prefix <prefix>', 'first part of every Redis key').default('hf'))
    .addOption(
      new Option('--http-listen <host:port>', 'serve the dashboard, Prometheus /metrics, /healthz and /readyz over HTTP here (off when absent)').env(
        'HOLDFAST_HTTP_LISTEN',
      ),
    )
    .addOption(
      new Option('--metrics-listen <host:port>', 'the same as --http-listen (its first name, kept for old configs)').env('HOLDFAST_METRICS_LISTEN').hideHelp(),
    )
    .addOption(
      new Option('--max-message-bytes <n>', 'largest request message accepted (RESOURCE_EXHAUSTED above)')
        .argParser(count)
        .default(DEFAULT_LIMITS.maxMessageBytes),
    )
    .addOption(
      new Option('--max-concurrent-streams <n>', 'calls open at once on one connection (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS)')
        .argParser(count)
        .default(DEFAULT_LIMITS.maxConcurrentStreams),
    )
    .addOption(
      new Option('--max-waiters-per-connection <n>', 'waiting Acquire calls and not yet granted Hold streams per connection')
        .argParser(count)
        .default(DEFAULT_LIMITS.maxWaitersPerConnection),
    )
    .addOption(new Option('--max-holds-per-connection <n>', 'open Hold streams per connection').argParser(count).default(DEFAULT_LIMITS.maxHoldsPerConnection))
    .addOption(
      new Option('--max-waiters-per-namespace <n>', 'waiting calls per namespace on this server')
        .argParser(count)
        .default(DEFAULT_LIMITS.maxWaitersPerNamespace),
    )
    .addOption(
      new Option('--max-holds-per-namespace <n>', 'open Hold streams per namespace on this server')
        .argParser(count)
        .default(DEFAULT_LIMITS.maxHoldsPerNamespace),
    )
    .addOption(
      new Option('--max-waiters-per-lock <n>', 'queued waiters per lock across all servers (0: no cap)')
        .argParser(count)
        .default(DEFAULT_LIMITS.maxWaitersPerLock),
    )
    .addOption(
      new Option('--max-session-ops <n>', 'operations in flight on one Session stream; at the cap the server stops reading it (HTTP/2 flow control)')
        .argParser(count)
        .default(DEFAULT_LIMITS.maxSessionOps),
    )
    .addOption(
      new Option('--max-session-waiters <n>', 'waiting acquire and hold operations in flight on one Session stream')
        .argParser(count)
        .default(DEFAULT_LIMITS.maxSessionWaiters),
    )
    .addOption(new Option('--max-session-locks <n>', 'locks held with hold on one Session stream').argParser(count).default(DEFAULT_LIMITS.maxSessionLocks))
    .addOption(
      new Option('--min-ping-interval-ms <ms>', "shortest interval between a client's pings when the server sent nothing in between")
        .argParser(millis)
        .default(DEFAULT_LIMITS.minPingIntervalMs),
    )
    .addOption(
      new Option('--max-ping-strikes <n>', 'pings sooner than that allowed before the connection is closed (GOAWAY too_many_pings)')
        .argParser(count)
        .default(DEFAULT_LIMITS.maxPingStrikes),
    )
    .addOption(new Option('--log-level <level>', 'pino log level').env('HOLDFAST_LOG_LEVEL').default('info'))
    .addOption(
      new Option('--workers <n|auto>', 'server processes sharing the listen port (node:cluster); auto: one per core').argParser(workerCount).default(1),
    )
    .addOption(
      new Option(
        '--optimize-for-size',
        "run the server under node's --optimize-for-size: less RSS per Hold stream and per lock held, for more CPU per call (README, Benchmarks)",
      ).default(false),
    )
    .addOption(new Option('--config <file>', 'YAML file of settings (keys spelled as the flags); flags and env override it').env('HOLDFAST_CONFIG'))
    .addOption(new Option('--print-config', 'print the effective settings (secrets masked) and exit').default(false))
    .action(async (_flags, command: Command) => {
      const opts = await settingsOrExit(command);
      if (opts.printConfig) return;
      const logger = serverLogger(opts.logLevel);
      routeGrpcLogs(logger);
      const tls = tlsFiles(opts);
      const credentials = new Credentials(opts.apiKeys, opts.clientCertificates);

      const refusal = protectedModeRefusal({ listen: opts.listen, tls: !!tls, authConfigured: credentials.configured, insecure: opts.insecure });
      if (refusal) refuseToStart(refusal);
      const fenceKeys = fenceRing(opts);
      if (runsWorkers(opts.workers, opts.optimizeForSize)) {
        const givenRedis = opts.redis || opts.redisCluster || opts.redisSentinels || opts.redlock;
        await runWorkers({
          workers: opts.workers,
          optimizeForSize: opts.optimizeForSize,
          embeddedRedisDir: givenRedis ? undefined : opts.dataDir,
          listen: opts.listen,
          httpListen: httpListen(opts),
          keyPrefix: opts.keyPrefix,
          logger,
        }).catch(refuseToRun);
        return;
      }
      // SIGTERM/SIGINT are caught from here on: one that comes while the server starts (or right
      // after it logs "holdfast listening", before this function has run on) waits for the start
      // and then stops it in order, instead of killing the process with its Redis child left behind.
      let signalledDuringStart: string | undefined;
      let shutdown = (signal: string) => void (signalledDuringStart ??= signal);
      process.once('SIGTERM', () => shutdown('SIGTERM'));
      process.once('SIGINT', () => shutdown('SIGINT'));
      let server: Awaited<ReturnType<typeof startServer>>;
      try {
        server = await startServer({
          listen: opts.listen,
          tls,
          redisUrl: opts.redis,
          redisClusterNodes: opts.redisCluster,
          redisSentinels: opts.redisSentinels,
          redlock: opts.redlock,
          redlockNodeTimeoutMs: opts.redlockNodeTimeoutMs,
          redlockTrustRestarts: opts.redlockTrustRestarts,
          redisMaster: opts.redisMaster,
          redisSecurity: redisSecurity(opts), // an unreadable --redis-tls-ca: TlsFilesError, below
          syncReplicas: opts.syncReplicas,
          syncTimeoutMs: opts.syncTimeoutMs,
          allowMinReplicasZero: opts.allowMinReplicasZero,
          unsafeNoFailoverSafety: opts.unsafeNoFailoverSafety,
          maxTtlMs: opts.maxTtlMs,
          quarantineMarginMs: opts.quarantineMarginMs,
          dataDir: opts.dataDir,
          defaultTtlMs: opts.defaultTtlMs,
          maxHoldMs: opts.maxHoldMs,
          lockDelayMs: opts.lockDelayMs,
          releaseOnDisconnect: opts.releaseOnDisconnect,
          keepaliveTimeMs: opts.keepaliveTimeMs,
          keepaliveTimeoutMs: opts.keepaliveTimeoutMs,
          deadlineMarginMs: opts.deadlineMarginMs,
          deadlockTimeoutMs: opts.deadlockTimeoutMs,
          keyPrefix: opts.keyPrefix,
          limits: {
            maxMessageBytes: opts.maxMessageBytes,
            maxConcurrentStreams: opts.maxConcurrentStreams,
            maxWaitersPerConnection: opts.maxWaitersPerConnection,
            maxHoldsPerConnection: opts.maxHoldsPerConnection,
            maxWaitersPerNamespace: opts.maxWaitersPerNamespace,
            maxHoldsPerNamespace: opts.maxHoldsPerNamespace,
            maxWaitersPerLock: opts.maxWaitersPerLock,
            maxSessionOps: opts.maxSessionOps,
            maxSessionWaiters: opts.maxSessionWaiters,
            maxSessionLocks: opts.maxSessionLocks,
            minPingIntervalMs: opts.minPingIntervalMs,
            maxPingStrikes: opts.maxPingStrikes,
          },
          httpListen: httpListen(opts),
          credentials,
          fenceKeys,
          logger,
        });
      } catch (err) {
        if (err instanceof TlsFilesError) refuseToStart(err.message);
        refuseToRun(err);
      }
      const running = server;
      let stopWatching = () => {};
      shutdown = (signal: string) => {
        logger.info({ signal }, 'shutting down');
        stopWatching();
        setTimeout(() => process.exit(1), EXIT_DEADLINE_MS).unref();
        running.stop().then(
          () => process.exit(0),
          (err) => {
            logger.error({ err }, 'shutdown failed');
            process.exit(1);
          },
        );
      };
      if (signalledDuringStart) shutdown(signalledDuringStart);
      announceListening();
      const { watchConfig } = await import('../config/reload');
      stopWatching = watchConfig(
        command,
        opts,
        (next, trigger) => {
          const reloaded = new Credentials(next.apiKeys, next.clientCertificates);
          if (!credentials.configured && reloaded.configured) {
            logger.warn({ trigger }, 'config: API keys and client certificates take effect on restart: this server started without authentication');
            return;
          }
          const ended = running.updateCredentials(reloaded);
          logger.info({ trigger, apiKeys: next.apiKeys.length, clientCertificates: next.clientCertificates.length, callsEnded: ended }, 'credentials reloaded');
        },
        logger,
      );
    });
  addEnvVars(command);
  // A bad flag or env value is a bad setting too: commander's message on one line, then exit 2.
  return command
    .configureOutput({
      outputError: (text, write) =>
        write(
          `holdfast: ${text
            .replace(/^error: /, '')
            .trim()
            .replace(/\s*\n\s*/g, ' ')}\n`,
        ),
    })
    .exitOverride((err) => process.exit(err.exitCode === 0 ? 0 : EXIT_BAD_CONFIG));
}
