// scripts/check-imports.mjs keeps docs/internals.md's layout true: it must pass on this repository
// and fail on a circle or an arrow that points up (fixtures written here).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script without types
import { check } from '../../scripts/check-imports.mjs';

const repo = join(__dirname, '..', '..');
const dirs: string[] = [];

function fixture(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'holdfast-imports-'));
  dirs.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

it('finds no circle and no forbidden arrow in src/ and clients/ts', () => {
  expect(check(repo, ['src', 'clients/ts'])).toEqual([]);
});

it('fails on a circle, type-only imports included', () => {
  const root = fixture({
    'src/engine/a.ts': "import { b } from './b';\nexport const a = b;\n",
    'src/engine/b.ts': "import type { C } from './c';\nexport const b = 1;\n",
    'src/engine/c.ts': "import { a } from './a';\nexport type C = typeof a;\n",
  });
  expect(check(root, ['src'])).toEqual(['import circle: src/engine/a.ts <-> src/engine/b.ts <-> src/engine/c.ts']);
});

it('fails on arrows that point up: the engine to gRPC or a Cluster, config to the transport, the SDK to the server', () => {
  const root = fixture({
    'src/engine/e.ts':
      "import { status } from '@grpc/grpc-js';\nimport { Cluster, type Redis } from 'ioredis';\nexport const e = [status, Cluster];\nexport type R = Redis;\n",
    'src/config/c.ts': "import { MAX } from '../transport/t';\nexport const c = MAX;\n",
    'src/transport/t.ts': 'export const MAX = 1;\n',
    'clients/ts/x.ts': "import { MAX } from '../../src/transport/t';\nexport const x = MAX;\n",
  });
  const problems: string[] = check(root, ['src', 'clients/ts']);
  expect(problems).toHaveLength(4);
  expect(problems.join('\n')).toMatch(/src\/engine\/e\.ts imports @grpc\/grpc-js/);
  expect(problems.join('\n')).toMatch(/src\/engine\/e\.ts imports ioredis \(Cluster/);
  expect(problems.join('\n')).toMatch(/src\/config\/c\.ts imports src\/transport\/t\.ts/);
  expect(problems.join('\n')).toMatch(/clients\/ts\/x\.ts imports src\/transport\/t\.ts/);
});

it('fails on an engine that reads files or starts processes: storage does that', () => {
  const root = fixture({
    'src/engine/e.ts':
      "import { readFileSync } from 'node:fs';\nimport { spawn } from 'child_process';\nimport { packageRoot } from '../package-root';\nexport const e = [readFileSync, spawn, packageRoot];\n",
    'src/package-root.ts': 'export const packageRoot = () => "";\n',
    'src/redis/scripts.ts':
      "import { readFileSync } from 'node:fs';\nimport { packageRoot } from '../package-root';\nexport const s = [readFileSync, packageRoot];\n",
  });
  const problems: string[] = check(root, ['src']);
  expect(problems).toHaveLength(3);
  expect(problems.join('\n')).toMatch(/src\/engine\/e\.ts imports node:fs \(readFileSync\): the engine reads no files/);
  expect(problems.join('\n')).toMatch(/src\/engine\/e\.ts imports child_process \(spawn\)/);
  expect(problems.join('\n')).toMatch(/src\/engine\/e\.ts imports src\/package-root\.ts/);
});

it('fails on the server reaching into an SDK by path, and lets both take the generated code from gen/', () => {
  const root = fixture({
    'src/transport/t.ts':
      "import { driftMarginMs } from '../../clients/ts/deadline';\nimport { HoldRequest } from '../../gen/holdfast/v1/lock';\nexport const t = [driftMarginMs, HoldRequest];\n",
    'src/cli/c.ts': "import { HoldfastClient } from '@holdfast/client';\nexport const c = HoldfastClient;\n",
    'clients/ts/deadline.ts': 'export const driftMarginMs = 1;\n',
    'clients/ts/hold.ts': "import { HoldRequest } from '../../gen/holdfast/v1/lock';\nexport const h = HoldRequest;\n",
    'gen/holdfast/v1/lock.ts': 'export const HoldRequest = {};\n',
  });
  expect(check(root, ['src', 'clients/ts'])).toEqual([
    'src/transport/t.ts imports clients/ts/deadline.ts: the server never reaches into an SDK by path: generated code comes from gen/, SDK pieces from the package (@holdfast/client)',
  ]);
});

it('lets the engine take a Redis type and config take config', () => {
  const root = fixture({
    'src/engine/e.ts': "import type { Redis } from 'ioredis';\nimport { B } from '../config/b';\nexport type R = Redis;\nexport const e = B;\n",
    'src/config/b.ts': "import { safe } from './safety';\nexport const B = safe;\n",
    'src/config/safety.ts': 'export const safe = 1;\n',
  });
  expect(check(root, ['src'])).toEqual([]);
});
