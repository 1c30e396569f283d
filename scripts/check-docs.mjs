#!/usr/bin/env node
// Keeps the docs honest: README.md, docs/*.md and clients/*/README.md may only name what exists.
// - every relative link leads to a file or folder, and an #anchor to a heading of that page;
// - every repository path written in backticks (src/…, test/…, lua/…) exists;
// - every `npm run X` is a script of package.json;
// - every --flag the pages name is a real one, checked against the commander definitions the built
//   CLI is made of (dist/src/cli/program.js, beside --cli), never a list kept here:
//   * on a line that runs a holdfast command (`holdfast CMD`, `npx holdfast CMD`,
//     `node dist/src/cli.js CMD`; a code block's backslash-continued lines are one), every flag
//     up to a comment, a pipe, `;`, `&&` or ` -- ` (what follows belongs to another program) must be
//     CMD's, and so must every flag of a listing block that opens with `holdfast CMD [options]`;
//   * a flag named on its own (a backtick span that starts with --, or bare in prose) must be some
//     holdfast command's, or another program's: one shown in use on a code-block line of the same
//     page that runs no holdfast command (grpcurl, redis-server, npm, go, mvn, pip, cargo, ...), or
//     one of OTHER_FLAGS, whose defining file must still mention it;
//   * an option kept only as an old name (hidden from --help) may be named only on a line that also
//     names the option that replaced it (the first flag its description names).
// Usage: node scripts/check-docs.mjs [--root DIR] [--cli dist/src/cli.js]. Exit 1 on any problem.
// Node built-ins only: the markdown it needs (fences, inline code, links, headings) is small.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Repository folders whose paths, written in backticks, must exist. Built output is left out. */
const PATH_ROOTS = /^(?:src|test|lua|clients|bench|examples|proto|docs|web|scripts|\.ci)\/[\w./-]*$/;
const BUILT = /(?:^|\/)(?:dist|build|node_modules)(?:\/|$)/;

/**
 * Flags of programs other than holdfast that the docs name on their own in prose, each with the
 * file that defines it: the check still fails if that file stops mentioning the flag.
 */
const OTHER_FLAGS = {
  '--duration': 'test/chaos/main.ts',
  '--seed': 'test/chaos/main.ts',
  '--faults': 'test/chaos/main.ts',
  '--quarantine': 'test/chaos/main.ts',
  '--sentinel': 'test/chaos/main.ts',
  '--negative': 'test/chaos/main.ts',
  '--short': 'examples/support.ts',
  '--waiters-per-lock': 'bench/resources.ts',
  '--locks': 'bench/dashboard.ts',
  '--baseline': 'bench/dashboard.ts',
  '--samples': 'bench/dashboard.ts',
  '--seconds': 'bench/support.ts',
  '--cpu-prof': 'node',
  '--cpu-prof-dir': 'node',
  '--max-semi-space-size': 'node',
};

/** Git tags of the Go module (clients/go/vX.Y.Z) look like paths and are not. */
const GO_TAG = /\/v(?:\d+\.\d+\.\d+|X\.Y\.Z)$/;

function parseArgs(argv) {
  const here = dirname(fileURLToPath(import.meta.url));
  const args = { root: resolve(here, '..'), cli: undefined };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--root') args.root = resolve(argv[++i]);
    else if (argv[i] === '--cli') args.cli = resolve(argv[++i]);
    else throw new Error(`check-docs: unknown argument ${argv[i]} (expected --root DIR, --cli FILE)`);
  }
  args.cli ??= join(args.root, 'dist/src/cli.js');
  return args;
}

/** The pages checked: README.md, docs/*.md, clients/<lang>/README.md. */
function pages(root) {
  const found = ['README.md'].filter((f) => existsSync(join(root, f)));
  const inDir = (dir, pick) => (existsSync(join(root, dir)) ? readdirSync(join(root, dir)).filter(pick).sort() : []);
  for (const f of inDir('docs', (n) => n.endsWith('.md'))) found.push(`docs/${f}`);
  for (const d of inDir('clients', (n) => existsSync(join(root, 'clients', n, 'README.md')))) found.push(`clients/${d}/README.md`);
  return found;
}

/** GitHub's heading anchors (github-slugger): lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading) {
  const text = heading.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1');
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/**
 * One page split into what the checks read: prose lines with inline code cut out, the inline
 * code spans, fenced blocks, headings' anchors. Line numbers are 1-based.
 */
function parse(text) {
  const prose = [];
  const spans = [];
  const blocks = [];
  const anchors = new Set();
  const seen = new Map();
  let block;
  text.split('\n').forEach((line, i) => {
    const n = i + 1;
    const fence = /^\s*(```|~~~)/.exec(line);
    if (block) {
      if (fence && line.trim().startsWith(block.marker)) blocks.push(block), (block = undefined);
      else block.lines.push({ n, text: line });
      return;
    }
    if (fence) return void (block = { marker: fence[1], start: n, lines: [] });
    for (const m of line.matchAll(/(`+)(.+?)\1/g)) spans.push({ n, text: m[2].trim() });
    prose.push({ n, text: line.replace(/(`+)(.+?)\1/g, ' ') });
    for (const m of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(m[1]);
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      const base = slug(heading[1]);
      const count = seen.get(base) ?? 0;
      seen.set(base, count + 1);
      anchors.add(count ? `${base}-${count}` : base);
    }
  });
  if (block) blocks.push(block);
  return { prose, spans, blocks, anchors, lines: text.split('\n') };
}

function checkLinks(root, page, doc, docs, problems) {
  const links = [];
  for (const { n, text } of doc.prose) {
    for (const m of text.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) links.push({ n, target: m[1] });
    const def = /^\s*\[[^\]]+\]:\s*(\S+)/.exec(text);
    if (def) links.push({ n, target: def[1] });
  }
  for (const { n, target } of links) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) continue;
    const [pathPart, anchor] = target.split('#', 2);
    const file = pathPart ? resolve(root, pathPart.startsWith('/') ? `.${pathPart}` : join(dirname(page), decodeURI(pathPart))) : join(root, page);
    const shown = relative(root, file) || '.';
    if (!existsSync(file)) {
      problems.push(`${page}:${n}: link to ${target}: no such file ${shown}`);
      continue;
    }
    if (anchor === undefined || !file.endsWith('.md') || statSync(file).isDirectory()) continue;
    const anchors = docs.get(relative(root, file))?.anchors ?? parse(readFileSync(file, 'utf8')).anchors;
    if (!anchors.has(decodeURIComponent(anchor))) problems.push(`${page}:${n}: link to ${target}: ${shown} has no heading #${anchor}`);
  }
}

function checkPaths(root, page, doc, problems) {
  for (const { n, text } of doc.spans) {
    if (!PATH_ROOTS.test(text) || BUILT.test(text) || GO_TAG.test(text)) continue;
    if (!existsSync(join(root, text)) && !existsSync(join(root, dirname(page), text))) problems.push(`${page}:${n}: path ${text} does not exist`);
  }
}

/** Every line the checks of commands read: prose, inline code, and each fenced block's lines. */
function allText(doc) {
  return [...doc.prose, ...doc.spans, ...doc.blocks.flatMap((b) => b.lines)];
}

function checkNpmScripts(page, doc, scripts, problems) {
  for (const { n, text } of allText(doc)) {
    for (const m of text.matchAll(/\bnpm run(?:-script)? ([\w:.-]+)/g)) {
      if (!scripts.has(m[1])) problems.push(`${page}:${n}: npm run ${m[1]}: no such script in package.json`);
    }
  }
}

/**
 * Each subcommand's flags, and the options kept only as old names (hidden from --help) with the
 * flag that replaced them, read from the commander definitions of the built CLI.
 */
function cliFlags(cli) {
  const programFile = join(dirname(cli), 'cli', 'program.js');
  const { holdfastProgram } = createRequire(programFile)(programFile);
  const program = holdfastProgram();
  const flagsOf = (command) => command.options.flatMap((o) => [o.long, o.short]).filter((f) => f?.startsWith('--'));
  const flags = new Map();
  const replacedBy = new Map();
  for (const command of program.commands) {
    flags.set(command.name(), new Set([...flagsOf(command), '--help']));
    for (const option of command.options.filter((o) => o.hidden)) {
      const replacement = /(?<![\w-])--[a-z0-9][\w-]*/.exec(option.description)?.[0];
      if (!replacement)
        throw new Error(`check-docs: ${command.name()} ${option.long} is hidden from --help but its description names no flag that replaced it`);
      replacedBy.set(option.long, replacement);
    }
  }
  return { flags, replacedBy, programFlags: new Set([...flagsOf(program), '--help']) };
}

const FLAG = /(?<![\w-])--[a-z0-9][\w-]*/g;

/** `holdfast CMD …` on one logical line: the flags given to CMD, up to a comment, pipe, or `--`. */
function commandUses(line, commands) {
  const uses = [];
  const head = new RegExp(`(?:^|[\\s$(\`])(?:npx\\s+)?(?:holdfast|node\\s+\\S*dist/src/cli\\.js)\\s+(${[...commands].join('|')})\\b(.*)`, 'g');
  for (const m of line.matchAll(head)) {
    const rest = m[2].split(/\s#\s|\s\|\s|;|&&|\|\||\s--(?:\s|$)/)[0];
    uses.push({ command: m[1], flags: [...rest.matchAll(FLAG)].map((f) => f[0]) });
  }
  return uses;
}

async function checkFlags(root, page, doc, cliOptions, problems) {
  const { flags: flagsOf, replacedBy, programFlags } = cliOptions;
  const known = new Set([...programFlags, ...[...flagsOf.values()].flatMap((s) => [...s])]);
  const commands = new Set(flagsOf.keys());
  const otherUses = new Set();
  const oldName = (n, flag) => {
    const replacement = replacedBy.get(flag);
    if (!replacement || doc.lines[n - 1].includes(replacement)) return false;
    problems.push(`${page}:${n}: ${flag} is only kept as an old name of ${replacement}: name ${replacement}, or both on one line`);
    return true;
  };
  const check = (n, command, flag) => {
    if (!flagsOf.get(command).has(flag)) problems.push(`${page}:${n}: holdfast ${command} has no flag ${flag} (not in its definition)`);
    else oldName(n, flag);
  };
  // Code blocks: backslash-continued lines are one; a block that opens with `holdfast CMD [options]` lists CMD's flags.
  for (const block of doc.blocks) {
    const listing = /^\s*(?:npx\s+)?holdfast\s+([\w-]+)\s+\[options\]/.exec(block.lines[0]?.text ?? '');
    if (listing && commands.has(listing[1])) {
      for (const { n, text } of block.lines) for (const f of text.matchAll(FLAG)) check(n, listing[1], f[0]);
      continue;
    }
    let joined = '';
    let start = 0;
    for (const { n, text } of block.lines) {
      if (!joined) start = n;
      joined += (joined ? text.trimStart() : text).replace(/\\$/, ' ');
      if (text.endsWith('\\')) continue;
      const uses = commandUses(joined, commands);
      for (const use of uses) for (const f of use.flags) check(start, use.command, f);
      if (!uses.length) for (const f of joined.split(/\s#\s/)[0].matchAll(FLAG)) otherUses.add(f[0]);
      joined = '';
    }
  }
  const alone = [];
  for (const { n, text } of doc.spans) {
    const uses = commandUses(text, commands);
    for (const use of uses) for (const f of use.flags) check(n, use.command, f);
    if (uses.length) continue;
    if (/^--[a-z0-9]/.test(text)) for (const f of text.matchAll(FLAG)) alone.push({ n, flag: f[0] });
    else for (const f of text.matchAll(FLAG)) otherUses.add(f[0]);
  }
  for (const { n, text } of doc.prose) for (const f of text.matchAll(FLAG)) alone.push({ n, flag: f[0] });
  // A flag named on its own: holdfast's, another program's shown on this page, or a known other.
  for (const { n, flag } of alone) {
    if (known.has(flag)) oldName(n, flag);
    else if (!otherUses.has(flag) && !(await isOtherProgramsFlag(root, flag)))
      problems.push(`${page}:${n}: flag ${flag} is no holdfast command's (not in any definition) nor another program's the docs know`);
  }
}

let nodeHelp;

/** A flag of OTHER_FLAGS that its program still has: in its source file, or in node's own help. */
async function isOtherProgramsFlag(root, flag) {
  const source = OTHER_FLAGS[flag];
  if (source === 'node') {
    nodeHelp ??= Promise.all([run(process.execPath, ['--help']), run(process.execPath, ['--v8-options'])]).then((r) => r.map((o) => o.stdout).join('\n'));
    return (await nodeHelp).includes(flag);
  }
  return Boolean(source) && existsSync(join(root, source)) && readFileSync(join(root, source), 'utf8').includes(flag.slice(2));
}

export async function checkDocs({ root, cli }) {
  const programFile = join(dirname(cli), 'cli', 'program.js');
  if (!existsSync(programFile)) return [`${relative(root, programFile)}: missing; build first (npx tsc -p .)`];
  const scripts = new Set(Object.keys(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts ?? {}));
  const cliOptions = cliFlags(cli);
  const docs = new Map(pages(root).map((p) => [p, parse(readFileSync(join(root, p), 'utf8'))]));
  const problems = [];
  for (const [page, doc] of docs) {
    checkLinks(root, page, doc, docs, problems);
    checkPaths(root, page, doc, problems);
    checkNpmScripts(page, doc, scripts, problems);
    await checkFlags(root, page, doc, cliOptions, problems);
  }
  return problems;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = parseArgs(process.argv.slice(2));
  const problems = await checkDocs(args);
  for (const p of problems) console.error(p);
  console.log(
    problems.length ? `check-docs: ${problems.length} problem(s)` : `check-docs: ${pages(args.root).length} pages, all links, paths, scripts and flags found`,
  );
  process.exitCode = problems.length ? 1 : 0;
}
