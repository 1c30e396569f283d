// Where `holdfast serve` takes its settings from, highest first: flags, HOLDFAST_* environment
// variables, the YAML file named by --config, the defaults. Commander parses flags and env (it
// records where each value came from); a file value fills in only a setting still at its default,
// parsed by the option's own parser as a flag would be. Then one schema checks the result, so a
// bad setting is refused the same way wherever it came from: one line naming it, exit 2.
import { readFileSync } from 'node:fs';
import type { Command, Option } from 'commander';
import YAML from 'yaml';
import { redactRedisUrl } from './redact';
import { z } from 'zod';
import { ConfigError } from './env';
import { configSchema, derivedDefaults, fileOnlySettings, masks, type ServeConfig } from './schema';

/** Where a setting's value came from. */
export type Source = 'flag' | 'env' | 'file' | 'default';

export interface ResolvedConfig {
  config: ServeConfig;
  sources: Record<string, Source>;
}

const NOT_FROM_FILE = new Set(['config', 'printConfig']);

const kebab = (camel: string) => camel.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
const camel = (kebabName: string) => kebabName.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());

function isBoolean(option: Option): boolean {
  return !option.required && !option.optional;
}

/** Commander sets a boolean option from any value of its variable, even "false": read it ourselves. */
function envBoolean(option: Option): boolean {
  const raw = (process.env[option.envVar!] ?? '').trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
  if (['', '0', 'false', 'no', 'off'].includes(raw)) return false;
  throw new ConfigError(`invalid setting ${option.envVar}: expected true or false, got "${raw}"`);
}

function parsedEnv(option: Option): unknown {
  const text = process.env[option.envVar!]!;
  try {
    return option.parseArg ? option.parseArg(text, undefined) : text;
  } catch (err) {
    throw new ConfigError(`invalid setting ${option.envVar}: ${(err as Error).message}`);
  }
}

function readConfigFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read config file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = YAML.parse(text, { prettyErrors: false });
  } catch (err) {
    throw new ConfigError(`config file ${path} is not valid YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed)) throw new ConfigError(`config file ${path} must be a map of settings`);
  return parsed as Record<string, unknown>;
}

/** A file value as the text a flag would carry, for the option's own parser. */
function asFlagText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return String(value);
  if (Array.isArray(value) && value.every((v) => typeof v === 'string' || typeof v === 'number')) return value.join(',');
  return undefined;
}

/** The config file's settings, by attribute name, each parsed as its flag would be. */
export function fileSettings(path: string, options: Option[]): Record<string, unknown> {
  const byName = new Map(options.map((o) => [o.long!.replace(/^--/, ''), o]));
  const settings: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(readConfigFile(path))) {
    const at = `${key} in ${path}`;
    const option = byName.get(key);
    if (option && NOT_FROM_FILE.has(option.attributeName())) throw new ConfigError(`invalid setting ${at}: only given as a flag`);
    if (!option) {
      if (camel(key) in fileOnlySettings && kebab(camel(key)) === key) settings[camel(key)] = value;
      else if (byName.has(kebab(key)) || kebab(key) in fileOnlySettings)
        throw new ConfigError(`unknown setting ${at}: settings are spelled as the flags are (${kebab(key)})`);
      else throw new ConfigError(`unknown setting ${at}`);
      continue;
    }
    if (isBoolean(option)) {
      if (typeof value !== 'boolean') throw new ConfigError(`invalid setting ${at}: expected true or false`);
      settings[option.attributeName()] = value;
      continue;
    }
    const text = asFlagText(value);
    if (text === undefined) throw new ConfigError(`invalid setting ${at}: expected a string, a number or a list of them`);
    try {
      settings[option.attributeName()] = option.parseArg ? option.parseArg(text, undefined) : text;
    } catch (err) {
      throw new ConfigError(`invalid setting ${at}: ${(err as Error).message}`);
    }
  }
  return settings;
}

const SOURCE_OF: Record<string, Source> = { cli: 'flag', env: 'env', default: 'default', implied: 'flag' };

/** Flags and env as commander parsed them, then the file where a setting is still at its default. */
export function resolveServeConfig(command: Command): ResolvedConfig {
  const values: Record<string, unknown> = { ...command.opts() };
  const sources: Record<string, Source> = {};
  for (const option of command.options) {
    const name = option.attributeName();
    const source = command.getOptionValueSource(name);
    sources[name] = (source && SOURCE_OF[source]) || 'default';
    if (source === 'env' && isBoolean(option)) values[name] = envBoolean(option);
    // Commander reads only the variables declared before addOption; addEnvVars' are read here.
    else if (sources[name] === 'default' && option.envVar && option.envVar in process.env) {
      values[name] = isBoolean(option) ? envBoolean(option) : parsedEnv(option);
      sources[name] = 'env';
    }
  }
  if (typeof values.config === 'string') {
    for (const [name, value] of Object.entries(fileSettings(values.config, command.options as Option[]))) {
      if (sources[name] && sources[name] !== 'default') continue;
      values[name] = value;
      sources[name] = 'file';
    }
  }
  checkConflicts(command, sources, values.config as string | undefined);
  derivedDefaults(values, (name) => sources[name] === 'default');
  const result = configSchema.safeParse(values);
  if (!result.success) throw new ConfigError(describeIssue(result.error.issues[0], command, sources, values.config as string | undefined));
  return { config: result.data, sources };
}

/** Commander refuses conflicting flags and variables; the same for settings from the file. */
function checkConflicts(command: Command, sources: Record<string, Source>, file?: string): void {
  for (const option of command.options) {
    const name = option.attributeName();
    if (sources[name] === 'default') continue;
    for (const other of (option as Option & { conflictsWith: string[] }).conflictsWith ?? []) {
      if (sources[other] && sources[other] !== 'default' && (sources[name] === 'file' || sources[other] === 'file')) {
        throw new ConfigError(
          `invalid setting ${settingName([name], command, sources, file)}: cannot be used with ${settingName([other], command, sources, file)}`,
        );
      }
    }
  }
}

/** The setting at fault, named as its user wrote it: the flag, the variable or the file key. */
function settingName(path: PropertyKey[], command: Command, sources: Record<string, Source>, file?: string): string {
  const [top, ...rest] = path.map(String);
  const option = command.options.find((o) => o.attributeName() === top);
  const tail = rest.map((p) => (/^\d+$/.test(p) ? `[${p}]` : `.${kebab(p)}`)).join('');
  switch (option ? sources[top] : 'file') {
    case 'env':
      return option!.envVar!;
    case 'file':
      return `${kebab(top)}${tail} in ${file}`;
    case 'default':
      return `${option!.long} (default)`;
    default:
      return option!.long!;
  }
}

function describeIssue(issue: z.core.$ZodIssue, command: Command, sources: Record<string, Source>, file?: string): string {
  return `invalid setting ${settingName(issue.path, command, sources, file)}: ${issue.message}`;
}

function unwrap(schema: z.ZodType): z.ZodType {
  let s = schema;
  while (s instanceof z.ZodOptional || s instanceof z.ZodDefault) s = s.unwrap() as z.ZodType;
  return s;
}

/** `value` as print-config shows it: secrets as ***, a URL's password as ***. */
function masked(schema: z.ZodType | undefined, value: unknown): unknown {
  if (!schema || value === undefined) return value;
  const mask = masks.get(schema)?.mask;
  if (mask === 'secret') return '***';
  if (mask === 'url-password' && typeof value === 'string') return redactRedisUrl(value);
  const inner = unwrap(schema);
  if (inner !== schema) return masked(inner, value);
  if (inner instanceof z.ZodArray && Array.isArray(value)) return value.map((v) => masked(inner.element as z.ZodType, v));
  if (inner instanceof z.ZodObject && value && typeof value === 'object') {
    const shape = inner.shape as Record<string, z.ZodType>;
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, masked(shape[k], v)]));
  }
  return value;
}

/** The effective configuration as YAML a --config file could hold, each setting's source as a comment. */
export function printableConfig({ config, sources }: ResolvedConfig): string {
  const shape = configSchema.shape as Record<string, z.ZodType>;
  const shown: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(config)) {
    if (NOT_FROM_FILE.has(name) || value === undefined) continue;
    const entry = masked(shape[name], value);
    // File-only lists hold objects: kebab-case their keys as the file spells them.
    shown[kebab(name)] = Array.isArray(entry)
      ? entry.map((e) => (e && typeof e === 'object' ? Object.fromEntries(Object.entries(e).map(([k, v]) => [kebab(k), v])) : e))
      : entry;
  }
  const doc = new YAML.Document(shown);
  for (const [name, source] of Object.entries(sources)) {
    const node = doc.get(kebab(name), true) as { comment?: string } | undefined;
    if (node && source !== 'file' && YAML.isScalar(node)) node.comment = ` ${source}`;
  }
  return doc.toString();
}
