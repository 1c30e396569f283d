// `npm run bench:auth-check`: what finding a caller's API key costs per call, with 1 to 1 000 keys
// configured (every entry is compared in constant time, so the cost grows with the number of
// keys), against what a slow password hash (scrypt, Node's default cost) would cost per call.
// In process, no server: the check is what auth adds to a call before its handler.
import { scryptSync } from 'node:crypto';
import { hashApiKey, newApiKey } from '../src/auth/api-keys';
import { Credentials, presentedKey } from '../src/auth/credentials';
import { fixed, machineNote, markdownTable, setting, writeResult } from './support';

const CHECKS = setting('checks', 'HOLDFAST_BENCH_CHECKS', 20_000);
const SCRYPTS = setting('scrypts', 'HOLDFAST_BENCH_SCRYPTS', 5);

/** Microseconds per call of `fn`, the median of five runs of `n` calls. */
function microsPerCall(n: number, fn: () => void): number {
  const runs: number[] = [];
  for (let r = 0; r < 5; r++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < n; i++) fn();
    runs.push(Number(process.hrtime.bigint() - start) / n / 1000);
  }
  return runs.sort((a, b) => a - b)[2];
}

const rows: string[][] = [];
for (const count of [1, 10, 100, 1000]) {
  const keys = Array.from({ length: count }, () => newApiKey());
  const credentials = new Credentials(keys.map((key, i) => ({ name: `key-${i}`, sha256: hashApiKey(key), namespace: 'bench', role: 'lock' as const })));
  const last = keys[count - 1];
  const unknown = newApiKey();
  const known = microsPerCall(Math.max(500, Math.floor(CHECKS / count)), () => credentials.principalOf(presentedKey(last)));
  const refused = microsPerCall(Math.max(500, Math.floor(CHECKS / count)), () => credentials.principalOf(presentedKey(unknown)));
  rows.push([`SHA-256, ${count} key${count > 1 ? 's' : ''}`, fixed(known, 1), fixed(refused, 1)]);
}
const scrypt = microsPerCall(SCRYPTS, () => scryptSync(newApiKey(), 'per-key-salt', 32));
rows.push(['scrypt (N=16384), 1 key', fixed(scrypt, 0), fixed(scrypt, 0)]);

const text = [
  '# API key check per call (`npm run bench:auth-check`)',
  '',
  machineNote(),
  '',
  markdownTable(['hash, keys configured', 'known key (µs)', 'unknown key (µs)'], rows),
].join('\n');
console.log(text);
console.log(`written to ${writeResult('auth-check.md', text)}`);
