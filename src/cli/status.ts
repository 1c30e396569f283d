import { Command, Option } from 'commander';
import type { LockInfo } from '@holdfast/client';
import { exitWith, withClient, withConnectionFlags, type ConnectionFlags } from './client-options';
import { EXIT } from './exit-codes';
import { followOverviews } from './overview-feed';
import { LeaseLengths, renderOverview } from './overview-view';
import { wholeNumber } from './options';
import { Screen } from './screen';
import { lockKind } from './lock-kind';
import { formatTable } from './table';

const HEADER = ['LOCK', 'OWNER', 'KIND', 'FENCING', 'TTL LEFT', 'HOLDS', 'WAITERS'];

interface StatusFlags extends ConnectionFlags {
  watch?: boolean;
  http?: string;
  prefix: string;
  intervalMs: number;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`;
}

/** One row a holder; a free lock gets one row that says so. */
function rowsOf(info: LockInfo): string[][] {
  const waiters = String(info.waiters);
  if (info.holders.length === 0) return [[info.name, '-', 'free', '-', '-', '-', waiters]];
  return info.holders.map((holder) => [
    info.name,
    holder.owner || '-',
    lockKind(info.limit, info.holders.length, holder.mode === 'shared'),
    String(holder.fencingToken),
    seconds(holder.ttlMs),
    String(holder.holdCount),
    waiters,
  ]);
}

/** The table of the named locks, with the quarantine line when grants are held back. */
function namedLocksTable(infos: LockInfo[]): string {
  const pausedMs = Math.max(0, ...infos.map((info) => info.grantsResumeInMs));
  const quarantine =
    pausedMs > 0 ? `quarantine after a Redis failover: no new grants for ${seconds(pausedMs)} (until ${new Date(Date.now() + pausedMs).toISOString()})\n` : '';
  return quarantine + formatTable([HEADER, ...infos.flatMap(rowsOf)]);
}

/** Redraws the named locks every intervalMs (Inspect each time) until Ctrl-C. */
async function watchNamed(names: string[], flags: StatusFlags): Promise<never> {
  return withClient(flags, async (client) => {
    const screen = new Screen(() => client.close());
    for (;;) {
      let frame: string;
      try {
        frame = namedLocksTable(await Promise.all(names.map((name) => client.inspect(name))));
      } catch (err) {
        frame = `holdfast ${flags.addr}: ${(err as Error).message}\n`;
      }
      screen.draw(`${frame}\nevery ${flags.intervalMs} ms · Ctrl-C to quit\n`);
      await new Promise((resolve) => setTimeout(resolve, flags.intervalMs));
    }
  });
}

/** Redraws the server's overview (the dashboard's event stream) as each one comes, until Ctrl-C. */
async function watchOverview(flags: StatusFlags): Promise<never> {
  const http = flags.http!;
  const stop = new AbortController();
  const screen = new Screen(() => stop.abort());
  const lengths = new LeaseLengths();
  await followOverviews({
    http,
    namePrefix: flags.prefix,
    apiKey: flags.apiKey,
    signal: stop.signal,
    onOverview: (overview) => screen.draw(`${renderOverview(overview, http, lengths)}\nlive · Ctrl-C to quit\n`),
    onBroken: (reason) => screen.draw(`holdfast ${http}: ${reason}\nreconnecting · Ctrl-C to quit\n`),
  });
  return process.exit(0);
}

/** --interval-ms: redrawing more often than every 100 ms only costs CPU. */
function interval(value: string): number {
  return wholeNumber(value, 'milliseconds', 100);
}

export function statusCommand(): Command {
  return withConnectionFlags(new Command('status'))
    .description(
      "print a table of the holders and waiters of each NAME; --watch redraws it in place, and with --http and no NAME shows the dashboard's picture",
    )
    .argument('[name...]', 'lock names')
    .option('--watch', 'redraw in place until Ctrl-C')
    .addOption(
      new Option('--http <host:port>', "the server's --http-listen address: --watch without NAME follows its dashboard stream").env('HOLDFAST_HTTP_ADDR'),
    )
    .addOption(new Option('--prefix <prefix>', 'with --http: only locks whose names start with this').default(''))
    .addOption(new Option('--interval-ms <ms>', 'with NAME and --watch: how often to redraw').argParser(interval).default(1000))
    .action((names: string[], flags: StatusFlags) => {
      if (names.length === 0 && !(flags.watch && flags.http)) {
        process.stderr.write("holdfast: give lock names, or --watch --http HOST:PORT (the server's --http-listen) for the server's overview\n");
        process.exit(EXIT.FAILED);
      }
      if (flags.watch) return names.length > 0 ? watchNamed(names, flags) : watchOverview(flags);
      return exitWith(() =>
        withClient(flags, async (client) => {
          process.stdout.write(namedLocksTable(await Promise.all(names.map((name) => client.inspect(name)))));
          return 0;
        }),
      );
    });
}
