import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

/** Starts test/support/hold-child.js and resolves once it reports the grant. */
export async function startHoldingChild(addr: string, name: string, ttlMs: number): Promise<{ child: ChildProcess; fencingToken: string; exited: Promise<void> }> {
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
