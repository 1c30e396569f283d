import { InvalidArgumentError } from 'commander';

/**
 * `value` as a whole number of at least `min`, or an InvalidArgumentError saying what is wrong
 * with it in words: empty, negative, below `min`, a fraction, too large, not digits (commander
 * names the option and the value before it). Digits only: Number() would take '' and ' ' as 0,
 * and 1e3 or 0x10. `unit` names what is counted ("milliseconds"); `orElse` another accepted word.
 */
export function wholeNumber(value: string, unit: string, min = 0, orElse?: string): number {
  const of = unit ? ` ${unit}` : '';
  const whole = `a whole number${unit ? ` of${of}` : ''}`;
  const alternative = orElse ? `, or ${orElse}` : '';
  const refuse = (why: string) => {
    throw new InvalidArgumentError(why);
  };
  const text = value.trim();
  if (text === '') refuse(`empty: give ${whole}${alternative}`);
  if (/^-\d*\.?\d+$/.test(text)) refuse(min > 0 ? `must not be negative: give ${min} or more${of}${alternative}` : 'must not be negative');
  if (/^\d*\.\d+$|^\d+\.$/.test(text)) refuse(`must be ${whole}, not a fraction`);
  if (!/^\d+$/.test(value)) refuse(`must be ${whole}${alternative} (digits only)`);
  const n = Number(value);
  if (!Number.isSafeInteger(n)) refuse(`too large: at most ${Number.MAX_SAFE_INTEGER}`);
  if (n < min) refuse(`must be ${min} or more${of}${alternative}`);
  return n;
}

/** Parses a non-negative whole number of milliseconds (commander argParser). */
export function millis(value: string): number {
  return wholeNumber(value, 'milliseconds');
}

/** Parses a non-negative whole number (commander argParser). */
export function count(value: string): number {
  return wholeNumber(value, '');
}
