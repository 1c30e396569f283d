// The docs check (scripts/check-docs.mjs) as CI runs it, a real child process reading real files,
// against small fixture repositories: a sound one passes, and each kind of lie is reported with its
// page and line (the negative controls). The real pages are checked by `npm run check:docs`.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = join(__dirname, '..', '..');
const CLI = join(ROOT, 'dist', 'src', 'cli.js');
const fixtures: string[] = [];

/** A repository of the given files (path -> text), with a package.json that has `build` and `bench`. */
function fixture(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'holdfast-docs-'));
  fixtures.push(dir);
  const all = { 'package.json': JSON.stringify({ scripts: { build: 'tsc', bench: 'node b.js' } }), 'src/server.ts': '', ...files };
  for (const [path, text] of Object.entries(all)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

function check(root: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [join(ROOT, 'scripts', 'check-docs.mjs'), '--root', root, '--cli', CLI], (err, stdout, stderr) => {
      resolve({ code: err ? Number(err.code) : 0, output: stdout + stderr });
    });
  });
}

const SOUND_README = [
  '# demo',
  '',
  'See [the API](docs/api.md#the-errors), [source](src/server.ts) and `src/server.ts`; run `npm run build`.',
  '',
  '```sh',
  'holdfast serve --listen 127.0.0.1:50051 \\',
  '  --max-ttl-ms 60000   # a comment may say --anything',
  'holdfast exec job --ttl-ms 5000 -- ./run.sh --not-ours',
  'npm run bench -- --seconds 5',
  '```',
  '',
  'The `--default-ttl-ms` flag, and `--seconds` of the benchmark above; bare, --max-ttl-ms too.',
  'Serve metrics with `--http-listen` (`--metrics-listen`, its first name, still works).',
  '',
].join('\n');
const SOUND_API = '# API\n\n## The errors\n\nBack to the [front](../README.md#demo).\n';

afterAll(() => {
  for (const dir of fixtures.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('check-docs', () => {
  it('passes pages whose links, paths, scripts and flags all exist', async () => {
    const { code, output } = await check(fixture({ 'README.md': SOUND_README, 'docs/api.md': SOUND_API }));
    expect(output).toContain('all links, paths, scripts and flags found');
    expect(code, output).toBe(0);
  }, 60_000);

  // Every kind of lie in one repository (one run of the check), each on a line of its own.
  const lies: [string, string, (line: number) => string][] = [
    ['a link to a missing file', 'See [gone](docs/gone.md).', (n) => `README.md:${n}: link to docs/gone.md: no such file docs/gone.md`],
    [
      'a link to a missing heading',
      'See [api](docs/api.md#no-such-part).',
      (n) => `README.md:${n}: link to docs/api.md#no-such-part: docs/api.md has no heading #no-such-part`,
    ],
    ['an anchor missing on its own page', 'See [below](#nowhere).', (n) => `README.md:${n}: link to #nowhere: README.md has no heading #nowhere`],
    ['a path in backticks that is not there', 'Read `src/engine/gone.ts`.', (n) => `README.md:${n}: path src/engine/gone.ts does not exist`],
    ['an npm script that package.json lacks', 'Run `npm run bench:nothing`.', (n) => `README.md:${n}: npm run bench:nothing: no such script in package.json`],
    [
      'a serve flag its --help lacks',
      '```sh\nholdfast serve --max-tll-ms 5\n```',
      (n) => `README.md:${n + 1}: holdfast serve has no flag --max-tll-ms (not in its definition)`,
    ],
    [
      'a flag of one command given to another',
      'Try `holdfast inspect jobs --ttl-ms 5`.',
      (n) => `README.md:${n}: holdfast inspect has no flag --ttl-ms (not in its definition)`,
    ],
    [
      'a flag on a continued line',
      '```sh\nholdfast serve --listen 127.0.0.1:1 \\\n  --tls-cetr a.crt\n```',
      (n) => `README.md:${n + 1}: holdfast serve has no flag --tls-cetr (not in its definition)`,
    ],
    [
      'a flag in a serve listing',
      '```\nholdfast serve [options]\n  --listen <host:port>\n  --no-such-option <x>\n```',
      (n) => `README.md:${n + 3}: holdfast serve has no flag --no-such-option (not in its definition)`,
    ],
    ['a flag named alone in prose', 'Set `--max-hold-secs` to cap a Hold.', (n) => `README.md:${n}: flag --max-hold-secs is no holdfast command's`],
    ['a flag bare in prose', 'Or set --max-hold-mins instead.', (n) => `README.md:${n}: flag --max-hold-mins is no holdfast command's`],
    ['the second flag of a span', 'Give `--listen 127.0.0.1:1 --lissen-too`.', (n) => `README.md:${n}: flag --lissen-too is no holdfast command's`],
    // The sentence docs/production.md held (issue 30): a real option, but only an old name kept for old configs.
    [
      'an old name without the option that replaced it',
      'Metrics are still off unless `--metrics-listen` is given.',
      (n) => `README.md:${n}: --metrics-listen is only kept as an old name of --http-listen: name --http-listen, or both on one line`,
    ],
    [
      'an old name given to holdfast serve',
      '```sh\nholdfast serve --metrics-listen 127.0.0.1:9464\n```',
      (n) => `README.md:${n + 1}: --metrics-listen is only kept as an old name of --http-listen`,
    ],
  ];
  let broken: { code: number; output: string; lineOf: number[] };

  beforeAll(async () => {
    const lines: string[] = ['# demo', ''];
    const lineOf = lies.map(([, text]) => {
      const at = lines.length + 1;
      lines.push(...text.split('\n'), '');
      return at;
    });
    const root = fixture({
      'README.md': lines.join('\n'),
      'docs/api.md': SOUND_API,
      'clients/go/README.md': 'See [the API](../../docs/api.md) and [gone](docs/x.md).\n',
    });
    broken = { ...(await check(root)), lineOf };
  }, 60_000);

  it('fails pages that name what does not exist, and counts each problem once', () => {
    expect(broken.output).toContain(`check-docs: ${lies.length + 1} problem(s)`);
    expect(broken.code, broken.output).toBe(1);
  });

  it.each(lies.map(([what], i) => [what, i]))('reports %s', (_what, i) => {
    expect(broken.output).toContain(lies[i as number][2](broken.lineOf[i as number]));
  });

  it('reports a broken link in a client README, resolved from its own folder', () => {
    expect(broken.output).toContain('clients/go/README.md:1: link to docs/x.md: no such file clients/go/docs/x.md');
    expect(broken.output).not.toContain('../../docs/api.md');
  });
});
