// The part of the config layer the serve command needs while it is being defined: error type,
// exit code and environment variable names. Kept apart from load.ts so that defining the
// commands does not load zod and yaml (about 90 ms of every client command's start).
import type { Command, Option } from 'commander';

/** Exit code of a refused configuration (as shells and argparse use 2 for usage errors). */
export const EXIT_BAD_CONFIG = 2;

/** A setting that cannot be used; its message is one line naming the setting. */
export class ConfigError extends Error {}

const NO_ENV = new Set(['printConfig']);

/** HOLDFAST_MAX_TTL_MS for --max-ttl-ms. */
export function envNameOf(option: Option): string {
  return `HOLDFAST_${option
    .attributeName()
    .replace(/[A-Z]/g, (c) => `_${c}`)
    .toUpperCase()}`;
}

/** Gives every option that has none an environment variable named after its flag. */
export function addEnvVars(command: Command): void {
  for (const option of command.options) {
    if (!option.envVar && !NO_ENV.has(option.attributeName())) option.env(envNameOf(option));
  }
}
