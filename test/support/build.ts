// vitest globalSetup: e2e tests run the built server (dist/) as a real child process, so build once:
// the SDK package (clients/ts/dist, which the server's CLI imports as @holdfast/client), then the server.
import { execFileSync } from 'node:child_process';

export default function setup(): void {
  for (const project of ['clients/ts/tsconfig.json', 'tsconfig.json']) {
    execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', project], { stdio: 'inherit' });
  }
}
