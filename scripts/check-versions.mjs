// Fails unless every client package states the version of the root package.json, which
// `holdfast --version` prints: one version for the server and all five clients.
import { readFileSync } from 'node:fs';

const read = (path) => readFileSync(new URL(`../${path}`, import.meta.url), 'utf8');
const version = JSON.parse(read('package.json')).version;

// Each package file and how its own version is written there.
const packages = [
  ['clients/ts/package.json', (text) => JSON.parse(text).version],
  ['clients/python/pyproject.toml', (text) => /^version\s*=\s*"([^"]+)"/m.exec(text)?.[1]],
  // The project's own <version>, the first one after its <artifactId> outside any dependency.
  ['clients/java/pom.xml', (text) => /<\/modelVersion>[\s\S]*?<artifactId>[^<]*<\/artifactId>\s*<version>([^<]+)<\/version>/.exec(text)?.[1]],
  ['clients/rust/Cargo.toml', (text) => /^\[package\][^[]*?^version\s*=\s*"([^"]+)"/m.exec(text)?.[1]],
  ['clients/go/version.go', (text) => /Version\s*=\s*"v?([^"]+)"/.exec(text)?.[1]],
];

const wrong = [];
for (const [path, versionOf] of packages) {
  let found;
  try {
    found = versionOf(read(path));
  } catch (err) {
    wrong.push(`${path}: cannot be read (${err.code ?? err.message})`);
    continue;
  }
  if (found !== version) wrong.push(`${path}: version ${found ?? '(none found)'}, the server's is ${version}`);
}
if (wrong.length > 0) {
  console.error(`check-versions: every package must state holdfast's version ${version} (package.json):`);
  for (const line of wrong) console.error(`  ${line}`);
  process.exit(1);
}
console.log(`check-versions: all ${packages.length + 1} packages are at ${version}`);
