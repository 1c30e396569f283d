// The Redlock backend: N independent Redis masters (src/redlock), no embedded Redis.
import { epochKey, namespacePrefix } from '../engine/keys';
import type { EngineObserver } from '../engine/observer';
import { redactRedisUrl } from '../config/redact';
import { RedlockEngine } from '../redlock/engine';
import { MAX_TTL_MS } from '../config/bounds';
import type { Backend, BackendConfig } from './backend';

export async function startRedlockBackend(config: BackendConfig, onChange: () => void, observer?: EngineObserver): Promise<Backend> {
  const log = config.logger;
  const urls = config.redlock!;
  const engine = new RedlockEngine({
    urls,
    keyPrefix: config.keyPrefix,
    maxTtlMs: config.maxTtlMs ?? MAX_TTL_MS,
    quarantineMarginMs: config.quarantineMarginMs ?? 1000,
    nodeTimeoutMs: config.redlockNodeTimeoutMs ?? 100,
    trustRestarts: config.redlockTrustRestarts,
    epochKey: epochKey(config.keyPrefix),
    onQuarantine: (url, why, ms) =>
      log.warn({ node: redactRedisUrl(url), why, ms }, 'Redlock: this master votes for no new grant until every lease it may have granted has run out'),
    onChange,
    observer,
  });
  log.info({ nodes: urls.map(redactRedisUrl), quorum: engine.quorum }, 'Redlock mode: grants need a majority of these Redis masters');
  return {
    engine,
    engineForNamespace: (namespace) => engine.withPrefix(namespacePrefix(config.keyPrefix, namespace)),
    description: urls.map(redactRedisUrl).join(','),
    serving: () => engine.grantsBlocked() === null,
    close: async () => {},
  };
}
