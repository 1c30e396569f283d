// Every Lua script's header lists exactly the KEYS and ARGV its code reads, and its file name's N
// is its number of KEYS (no Redis needed). The fixtures are drifted scripts: the negative controls.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { headerProblems } from '../support/lua-headers';

const ROOT = join(__dirname, '..', '..');
const luaFiles = (dir: string) =>
  readdirSync(join(ROOT, dir))
    .filter((f) => f.endsWith('.lua'))
    .map((f) => join(dir, f));

const OPERATIONS = [...luaFiles('lua'), 'clients/conformance/fence-record-1.lua'];
const INCLUDES = luaFiles('lua/includes');
const FIXTURES = join(__dirname, 'fixtures');

describe('Lua headers', () => {
  it('finds the operation scripts and includes', () => {
    expect(OPERATIONS.length).toBeGreaterThanOrEqual(15);
    expect(INCLUDES).toContain('lua/includes/expect-master.lua');
  });

  it.each(OPERATIONS)('%s: the header matches the code', (file) => {
    expect(headerProblems(join(ROOT, file), { keysInName: true })).toEqual([]);
  });

  it.each(INCLUDES)('%s: any KEYS or ARGV it reads is in its header', (file) => {
    expect(headerProblems(join(ROOT, file), { keysInName: false })).toEqual([]);
  });
});

describe('the check fails on a drifted header (negative controls)', () => {
  const problems = (file: string) => headerProblems(join(FIXTURES, file), { keysInName: true });

  it('passes a header of -- lines with a documented ARGV list', () => {
    expect(problems('documented-1.lua')).toEqual([]);
  });

  it.each([
    ['undocumented-arg-1.lua', 'undocumented-arg-1.lua: ARGV[2] is read but the header does not document it'],
    ['unread-arg-1.lua', 'unread-arg-1.lua: the header documents ARGV[2] but the script never reads it'],
    ['wrong-count-2.lua', 'wrong-count-2.lua: the file name says 2 KEYS, the header documents 1'],
    ['wrong-batch-count-2.lua', 'wrong-batch-count-2.lua: the file name says 2 KEYS, the header documents 3 per lease'],
    ['unused-local-1.lua', 'unused-local-1.lua: KEYS[1] is read into the local lockKey, which is never used'],
    [
      'unlisted-list-1.lua',
      'unlisted-list-1.lua: the script reads ARGV by a computed index (or its length) but the header has no ARGV[n..] or ARGV[#ARGV] entry',
    ],
    ['no-returns-1.lua', 'no-returns-1.lua: the header has no Returns section'],
  ])('%s', (file, problem) => {
    expect(problems(file)).toEqual([problem]);
  });
});
