#!/usr/bin/env node
// Keeps the layout of docs/internals.md true: no import circles between files, and no arrow
// from a part to one above it (the engine knows no transport, gRPC or topology, and reads no
// files; config sits at the bottom; storage and backends know no transport), and none between
// the server and an SDK (the generated code both use is in gen/). Type-only imports count too: a circle of
// types is still a circle for a reader.
// Usage: node scripts/check-imports.mjs [ROOT...] (default: src clients/ts). Exit 1 on any problem.
// Node built-ins only: the imports it reads are one regular expression away.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/**
 * Forbidden arrows: a file under `from` may not import a file under any `to` folder, nor a
 * package in `packages`, nor the named `symbols` of a package.
 */
export const RULES = [
  { from: 'src/config/', to: ['src/'], except: ['src/config/'], why: 'config sits at the bottom: every layer reads it' },
  {
    from: 'src/engine/',
    to: [
      'src/transport/',
      'src/backend/',
      'src/redis/',
      'src/redlock/',
      'src/server',
      'src/cli',
      'src/http/',
      'src/observability/',
      'src/dashboard/',
      'src/overview/',
    ],
    packages: ['@grpc/grpc-js', 'cluster-key-slot'],
    symbols: { ioredis: ['Cluster'] },
    why: 'the engine knows lock rules only: no transport, no gRPC, no topology',
  },
  {
    from: 'src/engine/',
    to: ['src/package-root'],
    packages: ['fs', 'node:fs', 'child_process', 'node:child_process'],
    why: 'the engine reads no files and starts nothing: storage reads the Lua files (src/redis/scripts.ts)',
  },
  {
    from: 'src/redis/',
    to: ['src/transport/', 'src/backend/', 'src/server', 'src/cli', 'src/http/', 'src/observability/'],
    why: 'storage knows no transport or wiring',
  },
  {
    from: 'src/redlock/',
    to: ['src/transport/', 'src/backend/', 'src/server', 'src/cli', 'src/http/', 'src/observability/'],
    why: 'storage knows no transport or wiring',
  },
  { from: 'src/backend/', to: ['src/transport/', 'src/server', 'src/cli'], why: 'backends are wired by the server, never the other way round' },
  { from: 'src/observability/', to: ['src/transport/', 'src/server', 'src/cli'], why: 'metrics and traces watch the engine, not the handlers' },
  { from: 'src/transport/', to: ['src/server', 'src/cli'], why: 'handlers are wired by the server' },
  { from: 'clients/ts/', to: ['src/'], why: 'the SDK never reaches into the server' },
  {
    from: 'src/',
    to: ['clients/'],
    why: 'the server never reaches into an SDK by path: generated code comes from gen/, SDK pieces from the package (@holdfast/client)',
  },
];

const IMPORT =
  /(?:^|\n)\s*(?:import|export)\s+(type\s+)?([^'";]*?)\s*from\s*['"]([^'"]+)['"]|(?:^|\n)\s*import\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;
const SKIP = /(?:^|\/)(?:dist|node_modules|gen|install-test|examples)(?:\/|$)/;

function sourceFiles(dir, repo) {
  const out = [];
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (SKIP.test(relative(repo, path))) continue;
    if (statSync(path).isDirectory()) out.push(...sourceFiles(path, repo));
    else if (/\.(ts|mts|js|mjs)$/.test(entry) && !entry.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

function resolveLocal(from, spec) {
  const base = resolve(dirname(from), spec);
  for (const candidate of [base, `${base}.ts`, base.replace(/\.js$/, '.ts'), join(base, 'index.ts')]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
  }
  return null;
}

/** Every import of `file`: { target (repo path or null), pkg (package name or null), names }. */
export function importsOf(file, repo) {
  const text = readFileSync(file, 'utf8');
  const found = [];
  for (const m of text.matchAll(IMPORT)) {
    const spec = m[3] ?? m[4] ?? m[5];
    const names = (m[2] ?? '')
      .replace(/[{}]/g, ' ')
      .split(/[\s,]+/)
      .filter(Boolean)
      .filter((n) => n !== 'type');
    if (spec.startsWith('.')) {
      const target = resolveLocal(file, spec);
      if (target) found.push({ target: relative(repo, target), pkg: null, names });
    } else {
      const pkg = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0];
      found.push({ target: null, pkg, names });
    }
  }
  return found;
}

/** Strongly connected components with more than one file (Tarjan): each is a circle. */
export function circles(graph) {
  let index = 0;
  const stack = [];
  const info = new Map();
  const result = [];
  const visit = (v) => {
    info.set(v, { index, low: index, onStack: true });
    index++;
    stack.push(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!info.has(w)) {
        visit(w);
        info.get(v).low = Math.min(info.get(v).low, info.get(w).low);
      } else if (info.get(w).onStack) info.get(v).low = Math.min(info.get(v).low, info.get(w).index);
    }
    if (info.get(v).low === info.get(v).index) {
      const component = [];
      let w;
      do {
        w = stack.pop();
        info.get(w).onStack = false;
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) result.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!info.has(v)) visit(v);
  return result;
}

export function check(repo, roots) {
  const problems = [];
  const graph = new Map();
  for (const root of roots) {
    const dir = join(repo, root);
    if (!existsSync(dir)) continue;
    for (const file of sourceFiles(dir, repo)) {
      const from = relative(repo, file);
      const imports = importsOf(file, repo);
      graph.set(from, [...new Set(imports.filter((i) => i.target).map((i) => i.target))]);
      for (const rule of RULES) {
        if (!from.startsWith(rule.from)) continue;
        for (const i of imports) {
          const banned =
            (i.target && rule.to.some((t) => i.target.startsWith(t)) && !(rule.except ?? []).some((e) => i.target.startsWith(e))) ||
            (i.pkg && (rule.packages ?? []).includes(i.pkg)) ||
            (i.pkg && (rule.symbols?.[i.pkg] ?? []).some((s) => i.names.includes(s)));
          if (banned) problems.push(`${from} imports ${i.target ?? `${i.pkg} (${i.names.join(', ')})`}: ${rule.why}`);
        }
      }
    }
  }
  for (const circle of circles(graph)) problems.push(`import circle: ${circle.join(' <-> ')}`);
  return problems;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const rootAt = args.indexOf('--root');
  const repo = rootAt >= 0 ? resolve(args[rootAt + 1]) : process.cwd();
  const roots = args.filter((a, i) => a !== '--root' && i !== rootAt + 1);
  const problems = check(repo, roots.length ? roots : ['src', 'clients/ts']);
  for (const p of problems) console.error(p);
  if (problems.length) {
    console.error(`check-imports: ${problems.length} problem(s); the allowed arrows are in docs/internals.md`);
    process.exit(1);
  }
  console.log('check-imports: no circles, no forbidden arrows');
}
