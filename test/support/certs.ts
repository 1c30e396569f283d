// Test certificates made with openssl by make-certs.sh (the Python and Go client checks use the
// same script), in a temporary directory per test file.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const SCRIPT = join(__dirname, 'make-certs.sh');

export interface TestCerts {
  dir: string;
  /** The path of `name` in dir, e.g. file('ca.crt'). */
  file(name: string): string;
  pem(name: string): Buffer;
  /** Issues NAME.crt and NAME.key for common name `cn` (with the server's names), signed by `ca`. */
  issue(name: string, cn: string, ca?: string): void;
  cleanup(): void;
}

/**
 * ca, server (localhost, 127.0.0.1, ::1) and client (CN=test-client) signed by it, and
 * other-ca with other-client, a client certificate from a CA the server does not trust.
 */
export function makeTestCerts(): TestCerts {
  const dir = mkdtempSync(join(tmpdir(), 'holdfast-certs-'));
  execFileSync('bash', [SCRIPT, dir]);
  return {
    dir,
    file: (name) => join(dir, name),
    pem: (name) => readFileSync(join(dir, name)),
    issue: (name, cn, ca = 'ca') => void execFileSync('bash', [SCRIPT, dir, 'leaf', name, cn, ca]),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}
