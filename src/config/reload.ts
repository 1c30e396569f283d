// Credentials (API keys, client certificates) are re-read from the config file on SIGHUP and
// when the file changes (checked once a second: a rename over it, as editors and Kubernetes
// ConfigMaps do, counts too). The whole file is checked as at start; a bad one is logged and the
// credentials in force stay. Other settings take effect on restart only, which is logged.
import { unwatchFile, watchFile, type Stats } from 'node:fs';
import type { Command } from 'commander';
import type { Logger } from 'pino';
import { ConfigError } from './env';
import { resolveServeConfig } from './load';
import type { ServeConfig } from './schema';

const CHECK_MS = 1000;
const RELOADED = new Set(['apiKeys', 'clientCertificates']);

/** Calls `apply` with each newly read configuration; returns a function that stops watching. */
export function watchConfig(command: Command, running: ServeConfig, apply: (next: ServeConfig, trigger: string) => void, log: Logger): () => void {
  const reload = (trigger: string) => {
    let next: ServeConfig;
    try {
      next = resolveServeConfig(command).config;
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      log.error({ trigger, problem: err.message }, 'config not reloaded: keeping the credentials in force');
      return;
    }
    const restartOnly = Object.keys(next).filter((k) => !RELOADED.has(k) && JSON.stringify(next[k]) !== JSON.stringify(running[k]));
    if (restartOnly.length > 0) log.warn({ settings: restartOnly }, 'config: these settings changed but take effect only on restart');
    apply(next, trigger);
  };
  const path = running.config;
  // Without a handler SIGHUP would end the process: with no file it is only logged.
  const onSighup = path ? () => reload('SIGHUP') : () => log.warn('SIGHUP: no --config file to reload');
  process.on('SIGHUP', onSighup);
  const onChange = (now: Stats, before: Stats) => {
    if (now.mtimeMs !== before.mtimeMs || now.ino !== before.ino || now.size !== before.size) reload('file change');
  };
  if (path) watchFile(path, { interval: CHECK_MS, persistent: false }, onChange);
  return () => {
    if (path) unwatchFile(path, onChange);
    process.removeListener('SIGHUP', onSighup);
  };
}
