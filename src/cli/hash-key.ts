// holdfast hash-key: what an operator puts in the config file for an API key. The key is read
// from standard input, never taken as an argument (arguments show in ps and shell history).
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { hashApiKey, newApiKey } from '../auth/api-keys';
import { EXIT_BAD_CONFIG } from '../config/env';

/** 128 bits in base64url: shorter keys are too easy to guess for a fast hash. */
const MIN_KEY_LENGTH = 22;

export function hashKeyCommand(): Command {
  return new Command('hash-key')
    .description("print the sha256 of an API key read from stdin, for the config file's api-keys (--generate: make a new key too)")
    .option('--generate', 'make a new random key and print it with its hash')
    .action((opts: { generate?: boolean }) => {
      if (opts.generate) {
        const key = newApiKey();
        process.stdout.write(`key: ${key}\nsha256: ${hashApiKey(key)}\n`);
        return;
      }
      const key = readFileSync(0, 'utf8').replace(/\r?\n$/, '');
      if (key.length < MIN_KEY_LENGTH || /\s/.test(key)) {
        process.stderr.write(
          `holdfast: an API key must be at least ${MIN_KEY_LENGTH} characters of random text without spaces; holdfast hash-key --generate makes one\n`,
        );
        process.exit(EXIT_BAD_CONFIG);
      }
      process.stdout.write(`${hashApiKey(key)}\n`);
    });
}
