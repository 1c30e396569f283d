import { InvalidArgumentError } from 'commander';

/**
 * `value` as a whole number of at least `min`, or an InvalidArgumentError saying what was expected
 * (commander names the option). Digits only: Number() would take '' and ' ' as 0, and 1e3 or 0x10.
 */
export function wholeNumber(value: string, expected: string, min = 0): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < min) {
    throw new InvalidArgumentError(value === '' ? `empty: expected ${expected}` : `expected ${expected}`);
  }
  return n;
}

/** Parses a non-negative whole number of milliseconds (commander argParser). */
export function millis(value: string): number {
  return wholeNumber(value, 'a whole number of milliseconds');
}

/** Parses a non-negative whole number (commander argParser). */
export function count(value: string): number {
  return wholeNumber(value, 'a whole number (0 or more)');
}
