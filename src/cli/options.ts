import { InvalidArgumentError } from 'commander';

/** Parses a non-negative whole number of milliseconds (commander argParser). */
export function millis(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('expected a whole number of milliseconds');
  return n;
}

/** Parses a non-negative whole number (commander argParser). */
export function count(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('expected a whole number (0 or more)');
  return n;
}
