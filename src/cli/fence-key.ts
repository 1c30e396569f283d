// holdfast fence-key: makes the Ed25519 key a server signs fences with, and prints the public half
// as the JWK set guards are given (docs/server.md, Signed fences). The private key goes only into
// a new file that only its owner may read; it is never printed.
import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { Command } from 'commander';
import { EXIT_BAD_CONFIG } from '../config/env';
import { FenceKeyError, loadSigningKey, signingKeyOf } from '../fencing/keys';
import { FenceRing } from '../fencing/ring';

const printJson = (value: object) => process.stdout.write(`${JSON.stringify(value)}\n`);

function fail(message: string): never {
  process.stderr.write(`holdfast: ${message}\n`);
  process.exit(EXIT_BAD_CONFIG);
}

function writeNewKey(file: string): void {
  const { privateKey } = generateKeyPairSync('ed25519');
  const key = signingKeyOf(privateKey);
  try {
    // 'wx': never over an existing file (another server's key, or a key guards already trust).
    writeFileSync(file, privateKey.export({ format: 'pem', type: 'pkcs8' }), { flag: 'wx', mode: 0o600 });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') fail(`fence-key new --out ${file}: the file exists; refusing to overwrite a key (remove it first, or choose another file)`);
    if (code === 'ENOENT') fail(`fence-key new --out ${file}: its directory does not exist`);
    if (code === 'EACCES') fail(`fence-key new --out ${file}: permission denied`);
    throw err;
  }
  process.stderr.write(`holdfast: wrote a new Ed25519 fence signing key to ${file} (mode 0600), key id ${key.keyId}; its public JWK set:\n`);
  printJson(new FenceRing(key).jwkSet());
}

function printPublic(file: string): void {
  try {
    printJson(new FenceRing(loadSigningKey(file, 'fence-key public', { checkMode: false })).jwkSet());
  } catch (err) {
    if (err instanceof FenceKeyError) fail(err.message);
    throw err;
  }
}

export function fenceKeyCommand(): Command {
  // --out is fence-key's own option (commander reads it after `new` too), so that the flag belongs
  // to the command the docs check (scripts/check-docs.mjs) looks up; only `new` takes it.
  const command = new Command('fence-key')
    .description('make a fence signing key (Ed25519) or print the public JWK set of one')
    .option('--out <file>', 'fence-key new: the file to write the private key to (refused when it exists)');
  command
    .command('new')
    .description('write a new Ed25519 private key (PEM PKCS#8, mode 0600) to --out for --fence-signing-key; prints its key id and public JWK set')
    .action((_opts, sub: Command) => {
      const { out } = sub.optsWithGlobals<{ out?: string }>();
      if (!out) fail('fence-key new needs --out <file>: the file to write the private key to');
      writeNewKey(out);
    });
  command
    .command('public')
    .description("print the JWK set of a signing key's public half (for guards, or another server's --fence-verify-keys)")
    .argument('<file>', 'the PEM private key file')
    .action((file: string, _opts, sub: Command) => {
      if (sub.optsWithGlobals<{ out?: string }>().out) fail('fence-key public prints the JWK set on stdout; --out is for fence-key new');
      printPublic(file);
    });
  return command;
}
