import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

/** Starts test/support/hold-child.js and resolves once it reports the grant. */
export async function startHoldingChild(
  addr: string,
  name: string,
  ttlMs: number,
): Promise<{ child: ChildProcess; fencingToken: string; exited: Promise<void> }> {
  const child = spawn(process.execPath, [join(__dirname, 'hold-child.js'), addr, name, String(ttlMs)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const fencingToken = await new Promise<string>((resolve, reject) => {
    let buffer = '';
    child.stdout!.on('data', (chunk) => {
      buffer += chunk.toString();
      const match = /"acquired":\{[^}]*"fencingToken":"(\d+)"/.exec(buffer);
      if (match) resolve(match[1]);
    });
    void exited.then(() => reject(new Error(`holding child exited before acquiring: ${buffer}`)));
  });
  return { child, fencingToken, exited };
}

export interface JsonLineChild {
  child: ChildProcess;
  /** Every JSON line the child printed so far. */
  lines: Record<string, unknown>[];
  /** Resolves with the first line (already printed or yet to come) that matches. */
  next(match: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
  exited: Promise<void>;
}

export type SdkHoldingChild = JsonLineChild;

/** Starts test/support/sdk-hold-child.js (a holder that uses the TS SDK) and resolves once it holds. */
export async function startSdkHoldingChild(addr: string, name: string, ttlMs: number): Promise<SdkHoldingChild> {
  const started = startJsonLineChild('sdk-hold-child.js', [addr, name, String(ttlMs)]);
  await started.next((line) => line.event === 'acquired');
  return started;
}

/** Starts test/support/<script> with `args`; it prints one JSON object a line on stdout. */
export function startJsonLineChild(script: string, args: string[]): JsonLineChild {
  const child = spawn(process.execPath, [join(__dirname, script), ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const lines: Record<string, unknown>[] = [];
  const waiting = new Set<() => void>();
  let buffer = '';
  child.stdout!.on('data', (chunk) => {
    buffer += chunk.toString();
    const parts = buffer.split('\n');
    buffer = parts.pop()!;
    for (const part of parts) lines.push(JSON.parse(part));
    for (const wake of [...waiting]) wake();
  });
  const next = (match: (line: Record<string, unknown>) => boolean) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const look = () => {
        const found = lines.find(match);
        if (found) {
          waiting.delete(look);
          resolve(found);
        }
      };
      waiting.add(look);
      look();
      void exited.then(() => waiting.has(look) && reject(new Error(`${script} exited: ${JSON.stringify(lines)}`)));
    });
  return { child, lines, next, exited };
}
