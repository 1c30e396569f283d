// Checks that a Lua script's header documents exactly the KEYS and ARGV its code reads (BullMQ's
// convention: a header listing KEYS[i], ARGV[i] and Returns; the file's N in verb-N.lua is the number of KEYS).
// Parses Lua by hand: strings and comments are blanked so only code is searched.
import { readFileSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { readScript } from '../../src/redis/scripts';

type Table = 'KEYS' | 'ARGV';
const TABLES: Table[] = ['KEYS', 'ARGV'];

/** What a header says a table holds: fixed indices, and the first index of an `ARGV[n..]` list (or `ARGV[#ARGV]`). */
interface Documented {
  fixed: Set<number>;
  restFrom?: number;
}

/** The script's leading comment: a `--[[ ... ]]` block or a run of `--` lines. */
export function headerOf(text: string): string | undefined {
  const block = /^--\[(=*)\[([\s\S]*?)\]\1\]/.exec(text);
  if (block) return block[2];
  const lines = /^(?:--[^\n]*\n)+/.exec(text);
  return lines ? lines[0] : undefined;
}

function documented(header: string, table: Table): Documented {
  const fixed = new Set<number>();
  let restFrom: number | undefined;
  for (const m of header.matchAll(new RegExp(`\\b${table}\\[(\\d+)(\\.\\.)?\\]`, 'g'))) {
    if (m[2]) restFrom = Number(m[1]);
    else fixed.add(Number(m[1]));
  }
  if (new RegExp(`\\b${table}\\[#${table}\\]`).test(header)) restFrom = restFrom ?? Number.POSITIVE_INFINITY;
  return { fixed, restFrom };
}

/** The code with every comment and string literal replaced by spaces (newlines kept). */
export function codeOnly(text: string): string {
  const blank = (s: string) => s.replace(/[^\n]/g, ' ');
  return text.replace(/--\[(=*)\[[\s\S]*?\]\1\]|--[^\n]*|\[(=*)\[[\s\S]*?\]\2\]|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"/g, blank);
}

/** Splits `a, f(b, c), d` at its top-level commas. */
function topLevelParts(expr: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < expr.length; i++) {
    const c = expr[i];
    if ('([{'.includes(c)) depth++;
    else if (')]}'.includes(c)) depth--;
    else if (c === ',' && depth === 0) {
      parts.push(expr.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(expr.slice(start));
  return parts.map((p) => p.trim());
}

/**
 * Problems with one script: an index read but not documented, documented but not read, read into
 * a local that is never used, a gap in the documented indices, no Returns, and (with `keysInName`)
 * a file name whose N is not the number of KEYS.
 */
export function headerProblems(file: string, options: { keysInName: boolean }): string[] {
  const own = readFileSync(file, 'utf8');
  const header = headerOf(own);
  const name = basename(file);
  if (header === undefined) return [`${name}: no header comment`];
  // The code of the script with its includes pasted in, as Redis runs it.
  const code = codeOnly(readScript(basename(file, '.lua'), dirname(file)));
  const problems: string[] = [];
  for (const table of TABLES) {
    const doc = documented(header, table);
    const used = new Set([...code.matchAll(new RegExp(`\\b${table}\\[\\s*(\\d+)\\s*\\]`, 'g'))].map((m) => Number(m[1])));
    const dynamic = new RegExp(`\\b${table}\\[\\s*[^\\d\\s\\]]|#${table}\\b|unpack\\(\\s*${table}\\b|table\\.remove\\(\\s*${table}\\b`).test(code);
    const covered = (i: number) => doc.fixed.has(i) || (doc.restFrom !== undefined && i >= doc.restFrom);
    for (const i of [...used].sort((a, b) => a - b)) {
      if (!covered(i)) problems.push(`${name}: ${table}[${i}] is read but the header does not document it`);
    }
    for (const i of [...doc.fixed].sort((a, b) => a - b)) {
      if (!used.has(i)) problems.push(`${name}: the header documents ${table}[${i}] but the script never reads it`);
    }
    if (dynamic && doc.restFrom === undefined) {
      problems.push(`${name}: the script reads ${table} by a computed index (or its length) but the header has no ${table}[n..] or ${table}[#${table}] entry`);
    }
    if (!dynamic && doc.restFrom !== undefined) {
      problems.push(`${name}: the header documents a list ${table}[n..] or ${table}[#${table}] but the script never reads ${table} by a computed index`);
    }
    const highest = Math.max(0, ...doc.fixed);
    for (let i = 1; i < highest; i++) {
      if (!doc.fixed.has(i)) problems.push(`${name}: the header skips ${table}[${i}] (it documents up to ${table}[${highest}])`);
    }
    if (table === 'KEYS' && options.keysInName) {
      const n = /-(\d+)\.lua$/.exec(name);
      if (!n) problems.push(`${name}: the file name does not end in -N.lua (N: the number of KEYS)`);
      else {
        // A script over many locks documents its KEYS as a list with the count per lock ("KEYS[1..]  3 per lease").
        const perLease = doc.restFrom === 1 ? /\bKEYS\[1\.\.\]\s+(\d+) per lease\b/.exec(header) : null;
        const count = perLease ? `${perLease[1]} per lease` : String(doc.fixed.size);
        if (Number(n[1]) !== (perLease ? Number(perLease[1]) : doc.fixed.size))
          problems.push(`${name}: the file name says ${n[1]} KEYS, the header documents ${count}`);
      }
    }
  }
  problems.push(...unusedLocals(name, codeOnly(own)));
  if (options.keysInName && !/^\s*(--\s*)?Returns\b/m.test(header)) problems.push(`${name}: the header has no Returns section`);
  return problems;
}

/** `local lockKey, token = KEYS[1], ARGV[1]` where a named local is never read again. */
function unusedLocals(name: string, code: string): string[] {
  const problems: string[] = [];
  for (const m of code.matchAll(/^[ \t]*local[ \t]+([\w \t,]+?)[ \t]*=[ \t]*([^\n]+)$/gm)) {
    const names = m[1].split(',').map((s) => s.trim());
    const values = topLevelParts(m[2]);
    const rest = code.slice(m.index + m[0].length);
    names.forEach((local, i) => {
      const read = /\b(KEYS|ARGV)\[(\d+)\]/.exec(values[i] ?? '');
      if (read && !new RegExp(`\\b${local}\\b`).test(rest)) {
        problems.push(`${name}: ${read[1]}[${read[2]}] is read into the local ${local}, which is never used`);
      }
    });
  }
  return problems;
}
