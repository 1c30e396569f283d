// holdfast watch NAME: prints the lock's state, then one line per change as it happens, until
// interrupted.
import { Command } from 'commander';
import { lostReasonToJSON, watchEventToJSON, type WatchResponse } from '../../gen/holdfast/v1/lock';
import type { HolderInfo, LockChange } from '@holdfast/client';
import { exitWith, withClient, withConnectionFlags, type ConnectionFlags } from './client-options';
import { printJson } from './print-json';

interface WatchFlags extends ConnectionFlags {
  json?: boolean;
}

function describeHolder(h: HolderInfo): string {
  const parts = [`fence=${h.fencingToken}`, `owner=${JSON.stringify(h.owner)}`, h.mode];
  if (h.value) parts.push(`value=${JSON.stringify(h.value)}`);
  if (h.holdCount === 0) parts.push(`vanished, closed for ${h.ttlMs} ms`);
  return parts.join(' ');
}

/** One line for people: time, event, the holder it is about, then who holds the lock now. */
export function describeChange(change: LockChange): string {
  const what = change.event === 'lost' && change.lostReason !== undefined ? `lost (${lostReasonToJSON(change.lostReason)})` : change.event;
  const about = change.holder ? ` ${describeHolder(change.holder)}` : change.deadlock ? ` ${change.deadlock}` : '';
  const holders = change.holders.length === 0 ? 'free' : change.holders.map((h) => `[${describeHolder(h)}]`).join(' ');
  return `${new Date().toISOString()} ${what}${about} | now: ${holders}, ${change.waiters} waiting`;
}

export function watchCommand(): Command {
  return withConnectionFlags(new Command('watch'))
    .description('print the state of NAME, then each change as it happens (granted, released, expired, lost, value changed, a waiter aborted by a deadlock)')
    .argument('<name>', 'lock name')
    .option('--json', 'print each WatchResponse as one JSON object a line')
    .action((name: string, flags: WatchFlags) =>
      exitWith(() =>
        withClient(flags, async (client) => {
          const stop = new AbortController();
          process.once('SIGINT', () => stop.abort());
          process.once('SIGTERM', () => stop.abort());
          if (flags.json) {
            const call = client.stub.watch({ name });
            stop.signal.addEventListener('abort', () => call.cancel());
            try {
              for await (const res of call as AsyncIterable<WatchResponse>) {
                printJson({ ...res, event: watchEventToJSON(res.event), lostReason: lostReasonToJSON(res.lostReason) });
              }
            } catch (err) {
              if (!stop.signal.aborted) throw err;
            }
            return 0;
          }
          for await (const change of client.watch(name, { signal: stop.signal })) process.stdout.write(`${describeChange(change)}\n`);
          return 0;
        }),
      ),
    );
}
