// The N independent Redis masters of Redlock mode: one fail-fast connection and one subscriber
// each, the redlock-*.lua scripts, and each node's restart watch.
//
// A node that restarted without persistence has forgotten the votes it gave, so a majority
// that counts it could grant a lock another client still holds (Kleppmann's and antirez's
// "delayed restart"). holdfast delays it centrally: each node has a FailoverWatch (its run_id
// and an epoch record, as for a Sentinel master), and a node whose run_id changed, or that this
// server cannot vouch for, does not vote for new grants until every lease it may have granted
// has run out (--max-ttl-ms + --quarantine-margin-ms). It still takes renewals and releases.
import { Redis } from 'ioredis';
import { readScript } from '../redis/scripts';
import { FailoverWatch } from '../redis/failover-watch';

export type RedlockScript = 'acquire' | 'fence' | 'renew' | 'release' | 'inspect';

const FILES: Record<RedlockScript, [file: string, keys: number]> = {
  acquire: ['redlock-acquire-2', 2],
  fence: ['redlock-fence-2', 2],
  renew: ['redlock-renew-2', 2],
  release: ['redlock-release-3', 3],
  inspect: ['redlock-inspect-2', 2],
};

export type Reply = (string | number)[] | number;

export interface RedlockNode {
  readonly url: string;
  /** Whether this node's vote counts for a new grant now (reachable, identified, not quarantined). */
  votes(): boolean;
  /** How long until it votes again (0: it does; an estimate while it is away). */
  votesInMs(): number;
  run(script: RedlockScript, keys: string[], args: (string | number)[]): Promise<Reply>;
  /** Calls `onMessage` with every wake-up this node publishes on a subscribed channel. */
  subscribe(channel: string): Promise<unknown>;
  unsubscribe(channel: string): Promise<unknown>;
}

export interface NodeOptions {
  /** How long one node may take to answer: well under a lease, so a slow node costs little validity. */
  timeoutMs: number;
  epochKey: string;
  quarantineMs: number;
  onMessage(channel: string, message: string): void;
  onQuarantine?: (url: string, why: string, ms: number) => void;
  onChange?: () => void;
}

export function connectNodes(urls: string[], options: NodeOptions): { nodes: RedlockNode[]; close(): void } {
  const closers: (() => void)[] = [];
  const nodes = urls.map((url): RedlockNode => {
    const commands = new Redis(url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      connectTimeout: 1000,
      commandTimeout: options.timeoutMs,
      retryStrategy: (attempt) => Math.min(50 * attempt, 500),
      connectionName: 'holdfast-redlock',
    });
    const subscriber = new Redis(url, {
      connectTimeout: 1000,
      retryStrategy: (attempt) => Math.min(50 * attempt, 500),
      connectionName: 'holdfast-redlock-sub',
    });
    commands.on('error', () => {}); // failures surface as a missing vote
    subscriber.on('error', () => {});
    subscriber.on('message', (channel: string, message: string) => options.onMessage(channel, message));
    for (const [script, [file, keys]] of Object.entries(FILES)) {
      commands.defineCommand(`redlock_${script}`, { numberOfKeys: keys, lua: readScript(file) });
    }
    const watch = new FailoverWatch({
      redis: commands,
      watched: [commands],
      epochKey: options.epochKey,
      quarantineMs: options.quarantineMs,
      onChange: options.onChange,
      onQuarantine: options.onQuarantine && ((why, ms) => options.onQuarantine!(url, why, ms)),
    });
    commands.on('close', () => options.onChange?.());
    commands.on('ready', () => options.onChange?.());
    closers.push(() => {
      watch.close();
      commands.disconnect();
      subscriber.disconnect();
    });
    return {
      url,
      votes: () => commands.status === 'ready' && watch.blocked() === null,
      votesInMs: () => (commands.status === 'ready' ? watch.resumeInMs() : 1000),
      run: (script, keys, args) => (commands as unknown as Record<string, (...a: unknown[]) => Promise<Reply>>)[`redlock_${script}`](...keys, ...args),
      subscribe: (channel) => subscriber.subscribe(channel),
      unsubscribe: (channel) => subscriber.unsubscribe(channel),
    };
  });
  return { nodes, close: () => closers.forEach((close) => close()) };
}
