#!/usr/bin/env node
// Keeps the README's Node version true for what `npm ci` installs: fails when a package in
// package-lock.json declares an engines.node range that no release of the README's Node major
// ("with Node 20") satisfies, as puppeteer-core 25 did (>=22.12.0: npm ci warned EBADENGINE).
// Prints the lowest release of that major every package accepts, so the README can say it.
// Usage: node scripts/check-engines.mjs [--root DIR]. Exit 1 on any problem.
// Ranges are read by `semver`, npm's own range parser (a devDependency of its own for this).
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

function loadSemver() {
  try {
    return createRequire(join(here, '..', 'package.json'))('semver');
  } catch {
    throw new Error('check-engines: the semver package is not installed (run npm ci)');
  }
}

function parseArgs(argv) {
  const args = { root: resolve(here, '..') };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--root') args.root = resolve(argv[++i]);
    else throw new Error(`check-engines: unknown argument ${argv[i]} (expected --root DIR)`);
  }
  return args;
}

/** The Node major the README promises ("with Node 20"). */
export function readmeNodeMajor(readme) {
  const found = /\bwith Node (\d+)\b/.exec(readme);
  return found ? Number(found[1]) : undefined;
}

/** A package's engines.node range: engines is an object, or (old packages) a list like ["node >=0.6"]. */
function nodeRange(engines) {
  if (!engines) return undefined;
  if (Array.isArray(engines)) return engines.find((e) => /^node\b/.test(e))?.replace(/^node\s*/, '');
  return typeof engines.node === 'string' ? engines.node : undefined;
}

/** The lowest release of `major` that `range` accepts, or null when it accepts none. */
function lowestOfMajor(semver, range, major) {
  const lowest = new semver.Range(range).set
    .map((comparators) => semver.minVersion(`${comparators.map((c) => c.value).join(' ')} >=${major}.0.0 <${major + 1}.0.0-0`.trim()))
    .filter(Boolean);
  return lowest.length ? lowest.reduce((a, b) => (semver.lt(a, b) ? a : b)) : null;
}

/** Problems (one line each) and the lowest release of the major that every package accepts. */
export function checkEngines(root) {
  const semver = loadSemver();
  const problems = [];
  const readmePath = join(root, 'README.md');
  const major = existsSync(readmePath) ? readmeNodeMajor(readFileSync(readmePath, 'utf8')) : undefined;
  if (major === undefined) return { problems: ['README.md: no "with Node N" found: which Node is promised?'], counted: 0 };
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'));
  let floor = semver.parse(`${major}.0.0`);
  const floorSetBy = [];
  let counted = 0;
  for (const [path, entry] of Object.entries(lock.packages ?? {})) {
    const range = nodeRange(entry.engines);
    if (range === undefined) continue;
    counted++;
    const name = `${path || '(root)'}@${entry.version ?? '?'}`;
    if (semver.validRange(range) === null) {
      problems.push(`package-lock.json: ${name} declares engines.node "${range}", which is not a version range`);
      continue;
    }
    const lowest = lowestOfMajor(semver, range, major);
    if (!lowest) {
      problems.push(`package-lock.json: ${name} wants Node "${range}", which no Node ${major} release satisfies (README.md says Node ${major})`);
      continue;
    }
    if (semver.gt(lowest, floor)) {
      floor = lowest;
      floorSetBy.length = 0;
    }
    if (semver.eq(lowest, floor)) floorSetBy.push(name);
  }
  return { problems, counted, major, floor: floor.version, floorSetBy };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { root } = parseArgs(process.argv.slice(2));
  const { problems, counted, major, floor, floorSetBy } = checkEngines(root);
  for (const p of problems) console.error(p);
  if (problems.length) console.log(`check-engines: ${problems.length} problem(s)`);
  else {
    const by = floorSetBy.length ? ` (${floorSetBy.slice(0, 3).join(', ')}${floorSetBy.length > 3 ? ', …' : ''})` : '';
    console.log(`check-engines: all ${counted} engines.node ranges in package-lock.json accept Node ${major}, from ${floor} on${by}`);
  }
  process.exitCode = problems.length ? 1 : 0;
}
