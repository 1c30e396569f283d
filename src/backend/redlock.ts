// The Redlock backend: N independent Redis masters (src/redlock/store.ts) under the one lock
// engine, no embedded Redis. Namespaces are engines on the same store with another key prefix.
import { LockEngine } from '../engine/engine';
import { epochKey, namespacePrefix } from '../engine/keys';
import type { EngineObserver } from '../engine/observer';
import { redactRedisUrl } from '../config/redact';
import { RedlockStore } from '../redlock/store';
import { MAX_TTL_MS } from '../config/bounds';
import type { Backend, BackendConfig } from './backend';

export async function startRedlockBackend(config: BackendConfig, onChange: () => void, observer?: EngineObserver): Promise<Backend> {
  const log = config.logger;
  const urls = config.redlock!;
  const maxTtlMs = config.maxTtlMs ?? MAX_TTL_MS;
  const store = new RedlockStore({
    urls,
    nodeTimeoutMs: config.redlockNodeTimeoutMs ?? 100,
    quarantineMs: config.redlockTrustRestarts ? 0 : maxTtlMs + (config.quarantineMarginMs ?? 1000),
    epochKey: epochKey(config.keyPrefix),
    onQuarantine: (url, why, ms) =>
      log.warn({ node: redactRedisUrl(url), why, ms }, 'Redlock: this master votes for no new grant until every lease it may have granted has run out'),
    onChange,
  });
  const engineWithPrefix = (keyPrefix: string) =>
    new LockEngine(store, {
      observer,
      keyPrefix,
      maxTtlMs,
      // Renewals a majority did not confirm are tried again; the Hold ends lost when its lease would.
      onBackgroundError: (err) => log.debug({ err: String((err as Error)?.message ?? err) }, 'background Redlock call failed'),
    });
  const engine = engineWithPrefix(config.keyPrefix);
  log.info({ nodes: urls.map(redactRedisUrl), quorum: store.quorum }, 'Redlock mode: grants need a majority of these Redis masters');
  return {
    engine,
    engineForNamespace: (namespace) => engineWithPrefix(namespacePrefix(config.keyPrefix, namespace)),
    description: urls.map(redactRedisUrl).join(','),
    serving: () => store.grantsBlocked() === null,
    close: async () => store.close(),
  };
}
