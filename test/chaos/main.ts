// `npm run chaos`: the default configuration under every fault class (about 5 minutes), then the
// negative control; prints the report and writes bench/results/chaos.md and chaos.svg.
//   --duration <s>   workload time of the main run (default 150: about 5 minutes in all)
//   --seed <n>       fault schedule and workload choices (default 1)
//   --negative <s>   workload time of the negative control (default 30; 0 skips it)
//   --quarantine <s> workload time of the run with --failover-quarantine (default 45; 0 skips it)
//   --sentinel <s>   workload time of each Sentinel failover run, without and with --sync-replicas auto (default 45; 0 skips them)
//   --faults <a,b>   only these fault classes (default: all; see faults.ts)
//   --keep-logs      keep the worker logs and run.json (their directory is printed)
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FAULT_CLASSES, type FaultClass } from './faults';
import { RESULTS } from './paths';
import { defaultRun, negativeControl, quarantineRun, sentinelRun } from './profiles';
import { LEGEND, machineNote, section, sourceNote } from './report';
import { runChaos } from './run';
import { grantsSvg } from './svg';
import { claimedSafe, violations } from './tally';

function option(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const raw = i >= 0 ? process.argv[i + 1] : undefined;
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0) throw new Error(`--${name}: expected a non-negative number, got "${raw}"`);
  return n;
}

async function main(): Promise<void> {
  const durationS = option('duration', 150);
  const seed = option('seed', 1);
  const negativeS = option('negative', 30);
  const keepLogs = process.argv.includes('--keep-logs');
  const only = process.argv.includes('--faults') ? process.argv[process.argv.indexOf('--faults') + 1].split(',') : undefined;
  const unknown = only?.filter((c) => !(c in FAULT_CLASSES));
  if (unknown?.length) throw new Error(`--faults: unknown fault classes ${unknown.join(', ')}; known: ${Object.keys(FAULT_CLASSES).join(', ')}`);
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const machine = `${machineNote()}; ${sourceNote()}`;
  const main = await runChaos({ ...defaultRun(durationS, seed, only ? { faults: only as FaultClass[] } : {}), keepLogs, log });
  const quarantineS = option('quarantine', 45);
  const quarantine = quarantineS > 0 ? await runChaos({ ...quarantineRun(quarantineS, seed), keepLogs, log }) : undefined;
  const sentinelS = option('sentinel', 45);
  const failover = sentinelS > 0 ? await runChaos({ ...sentinelRun(sentinelS, seed, false), keepLogs, log }) : undefined;
  const synced = sentinelS > 0 ? await runChaos({ ...sentinelRun(sentinelS, seed, true), keepLogs, log }) : undefined;
  const negative = negativeS > 0 ? await runChaos({ ...negativeControl(negativeS, seed), keepLogs, log }) : undefined;
  const safe = [main, quarantine, failover, synced].reduce((sum, run) => sum + (run ? violations(claimedSafe(run)) : 0), 0);
  const notRun = Object.entries(FAULT_CLASSES)
    .filter(([, info]) => info.notRun)
    .map(([cls, info]) => `- ${cls}: ${info.notRun}`);
  const text = [
    `# Chaos run (npm run chaos -- --duration ${durationS} --seed ${seed})`,
    '',
    `${machine}. Violations under the fault classes holdfast claims safety for in each configuration (and without a fault): **${safe}**.${negative ? ` Negative control: **${violations(claimedSafe(negative, true))}** (it must be above 0).` : ''}`,
    '',
    LEGEND,
    '',
    section(main, 'Default configuration'),
    ...(quarantine ? ['', section(quarantine, 'One Redis with --failover-quarantine: restarts without persistence')] : []),
    ...(failover ? ['', section(failover, 'Sentinel failover, no replica acknowledgement (issue 9)')] : []),
    ...(synced ? ['', section(synced, 'Sentinel failover with --sync-replicas auto')] : []),
    ...(negative ? ['', section(negative, 'Negative control: --release-on-disconnect, careless clients')] : []),
    '',
    ...(notRun.length ? ['## Not run', '', ...notRun, ''] : []),
  ].join('\n');
  process.stdout.write(text);
  mkdirSync(RESULTS, { recursive: true });
  writeFileSync(join(RESULTS, 'chaos.md'), text);
  // The picture is of the main run; the others are in the tables.
  writeFileSync(join(RESULTS, 'chaos.svg'), grantsSvg(main, `npm run chaos -- --duration ${durationS} --seed ${seed}`));
  log(`written to ${join(RESULTS, 'chaos.md')} and chaos.svg${keepLogs ? `; logs in ${main.logDir}${negative ? ` and ${negative.logDir}` : ''}` : ''}`);
  if (safe > 0 || (negative && violations(claimedSafe(negative, true)) === 0)) process.exitCode = 1;
}

main().catch((err) => {
  process.stderr.write(`${err?.stack ?? err}\n`);
  process.exit(1);
});
