// The one schema every `holdfast serve` setting is checked against, whichever of the config
// file, the environment or the command line it came from. Keys are the commander attribute names
// (camelCase) of the serve options; the config file spells them as the flags do (kebab-case).
// A new serve option adds its entry here; test/unit/config.test.ts fails until it does.
import { z } from 'zod';
import { MAX_TTL_MS, MIN_TTL_MS } from './bounds';
import { UNSAFE_FLAG, defaultSyncReplicas } from './safety';

/** How print-config shows a setting that may hold a secret. */
export type Mask = 'secret' | 'url-password';
export const masks = z.registry<{ mask: Mask }>();

/** A setting never shown as it is (a password): print-config writes `***`. */
export function secret<T extends z.ZodType>(schema: T): T {
  masks.add(schema, { mask: 'secret' });
  return schema;
}

/** A URL whose password, if any, print-config writes as `***`. */
export function urlWithPassword<T extends z.ZodType>(schema: T): T {
  masks.add(schema, { mask: 'url-password' });
  return schema;
}

/**
 * A whole number of at least `min` (and at most `max`), each refusal saying its cause in the
 * words of the flag parsers (src/cli/options.ts), which have already refused what is not a
 * whole number: zod's own ("Too small: expected number to be >=1") speaks of its types.
 */
function whole(unit: string, min: number, max?: number, maxWhy = '') {
  const of = unit ? ` ${unit}` : '';
  const checked = z
    .number()
    .int(`must be a whole number${unit ? ` of${of}` : ''}`)
    .min(min, min === 0 ? 'must not be negative' : `must be ${min} or more${of}`);
  return max === undefined ? checked : checked.max(max, `must be at most ${max}${of}${maxWhy}`);
}
const ms = (min = 0, max?: number, maxWhy?: string) => whole('milliseconds', min, max, maxWhy);
const count = (min = 0) => whole('', min);

/** A Redis URL (redis:// or rediss://); the value is echoed only when it holds no credentials. */
const redisUrl = z
  .string()
  .min(1)
  .superRefine((value, ctx) => {
    let ok = false;
    try {
      const url = new URL(value);
      ok = (url.protocol === 'redis:' || url.protocol === 'rediss:') && url.hostname !== '';
    } catch {
      ok = false;
    }
    if (!ok) {
      const shown = value.includes('@') ? '' : ` (got "${value}")`;
      ctx.addIssue({ code: 'custom', message: `must be a Redis URL such as redis://127.0.0.1:6379 or rediss://host:6380${shown}` });
    }
  });
const hostPorts = z.array(z.string().min(1)).min(1);

export const ROLES = ['read', 'lock', 'admin'] as const;
export type Role = (typeof ROLES)[number];

/**
 * A namespace names a tenant's own key prefix; `default` is the one unauthenticated servers use
 * (the keys as they were before namespaces). Kept to characters that need no escaping in a key.
 */
export const namespaceName = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, 'a namespace is 1-63 of a-z, 0-9, _ and -, starting with a letter or digit');

const grant = { namespace: namespaceName, role: z.enum(ROLES) };

/** One API key: only its SHA-256 (`holdfast hash-key`) is kept. */
export const apiKeyEntry = z.strictObject({
  /** Names the key in logs and errors (the key itself never appears). */
  name: z.string().min(1).max(128),
  sha256: z
    .string()
    .regex(/^[0-9a-f]{64}$/i, 'sha256 must be 64 hex digits: the output of holdfast hash-key')
    .transform((h) => h.toLowerCase())
    .register(masks, { mask: 'secret' }),
  ...grant,
});

/** A client certificate (mTLS) whose subject has every attribute given here. */
export const clientCertificateEntry = z.strictObject({
  name: z.string().min(1).max(128),
  subject: z
    .record(z.string().regex(/^[A-Za-z][A-Za-z0-9.]*$/, 'a subject attribute such as CN or O'), z.string())
    .refine((s) => Object.keys(s).length > 0, 'subject needs at least one attribute, e.g. CN'),
  ...grant,
});

export type ApiKeyEntry = z.infer<typeof apiKeyEntry>;
export type ClientCertificateEntry = z.infer<typeof clientCertificateEntry>;

/** Settings only the config file gives (no flag, no env): re-read on SIGHUP and file change. */
export const fileOnlySettings = {
  apiKeys: z.array(apiKeyEntry).default([]),
  clientCertificates: z.array(clientCertificateEntry).default([]),
};

/** The serve options, by commander attribute name. */
export const serveSettings = {
  config: z.string().optional(),
  printConfig: z.boolean(),
  listen: z.string().min(1),
  tlsCert: z.string().min(1).optional(),
  tlsKey: z.string().min(1).optional(),
  tlsClientCa: z.string().min(1).optional(),
  tlsReloadCheckMs: ms(1),
  insecure: z.boolean(),
  fenceSigningKey: z.string().min(1).optional(),
  fenceVerifyKeys: z.string().min(1).optional(),
  redis: urlWithPassword(redisUrl.optional()),
  redisCluster: hostPorts.optional(),
  redisSentinels: hostPorts.optional(),
  redlock: z.array(urlWithPassword(redisUrl)).min(3, 'Redlock needs at least 3 Redis masters (a majority of 1 or 2 survives no failure)').optional(),
  redlockNodeTimeoutMs: ms(1),
  redlockTrustRestarts: z.boolean(),
  redisTls: z.boolean(),
  redisTlsCa: z.string().min(1).optional(),
  redisUsername: z.string().min(1).optional(),
  redisPassword: secret(z.string().min(1).optional()),
  redisSentinelUsername: z.string().min(1).optional(),
  redisSentinelPassword: secret(z.string().min(1).optional()),
  redisMaster: z.string().min(1),
  syncReplicas: z.union([z.literal('auto'), count()]),
  syncTimeoutMs: ms(1, 900, ' (under the 1 s command timeout)'),
  allowMinReplicasZero: z.boolean(),
  failoverQuarantine: z.boolean(),
  unsafeNoFailoverSafety: z.boolean(),
  maxTtlMs: ms(0, MAX_TTL_MS, ' (a day)'),
  quarantineMarginMs: ms(),
  dataDir: z.string().min(1),
  defaultTtlMs: ms(MIN_TTL_MS, MAX_TTL_MS, ' (a day)'),
  maxHoldMs: ms(),
  lockDelayMs: ms(),
  releaseOnDisconnect: z.boolean(),
  keepaliveTimeMs: ms(),
  keepaliveTimeoutMs: ms(),
  deadlineMarginMs: ms(),
  deadlockTimeoutMs: ms(),
  keyPrefix: z.string().min(1),
  maxMessageBytes: count(1),
  maxConcurrentStreams: count(1),
  maxWaitersPerConnection: count(),
  maxHoldsPerConnection: count(),
  maxWaitersPerNamespace: count(),
  maxHoldsPerNamespace: count(),
  maxWaitersPerLock: count(),
  maxSessionOps: count(1),
  maxSessionWaiters: count(),
  maxSessionLocks: count(),
  minPingIntervalMs: ms(),
  maxPingStrikes: count(),
  httpListen: z
    .string()
    .regex(/^(\[[^\]]*\]|[^:\s]*):\d{1,5}$/, 'HOST:PORT, for example 127.0.0.1:9464')
    .optional(),
  metricsListen: z
    .string()
    .regex(/^(\[[^\]]*\]|[^:\s]*):\d{1,5}$/, 'HOST:PORT, for example 127.0.0.1:9464')
    .optional(),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
  workers: z.union([z.literal('auto'), count(1)]),
  optimizeForSize: z.boolean(),
};

/** Defaults that depend on other settings, applied before the checks to a setting still at its default. */
export function derivedDefaults(s: Record<string, unknown>, isDefault: (name: string) => boolean): void {
  if (isDefault('syncReplicas')) s.syncReplicas = defaultSyncReplicas(s);
}

/** Rules between settings; `path` names the setting at fault. */
function crossChecks(s: Record<string, unknown>, ctx: z.RefinementCtx): void {
  if (s.allowMinReplicasZero && !s.unsafeNoFailoverSafety) {
    ctx.addIssue({
      code: 'custom',
      path: ['allowMinReplicasZero'],
      message: `lets a master cut off from its replicas go on granting: it needs ${UNSAFE_FLAG}, which says so`,
    });
  }
  if (s.failoverQuarantine && s.unsafeNoFailoverSafety) {
    ctx.addIssue({ code: 'custom', path: ['failoverQuarantine'], message: `is the default; it cannot go with ${UNSAFE_FLAG}, which turns it off` });
  }
  if (s.redlock && s.syncReplicas)
    ctx.addIssue({ code: 'custom', path: ['syncReplicas'], message: 'does not apply to --redlock (its masters have no replicas)' });
  const { defaultTtlMs, maxTtlMs } = s as { defaultTtlMs: number; maxTtlMs: number };
  if (maxTtlMs < defaultTtlMs) ctx.addIssue({ code: 'custom', path: ['maxTtlMs'], message: `must be at least default-ttl-ms (${defaultTtlMs})` });
}

/**
 * The whole effective configuration. Loose, so that a setting added without a schema entry is
 * still passed through (the unit test catches it); file-only settings get their defaults.
 */
export const configSchema = z.looseObject({ ...serveSettings, ...fileOnlySettings }).superRefine(crossChecks);

export type ServeConfig = z.infer<typeof configSchema>;
