#!/usr/bin/env node
// Tests the package as users get it: pack it, run publint and @arethetypeswrong/cli on the
// tarball, install the tarball into a scratch project and import every subpath from ESM and CJS.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const work = mkdtempSync(join(tmpdir(), 'api-conventions-pack-'));
const run = (cmd, args, cwd = root) =>
  execFileSync(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });

try {
  // `prepack` builds dist first, as on a fresh clone; its output comes before npm's JSON.
  const output = run('npm', ['pack', '--json', '--pack-destination', work]);
  const packed = JSON.parse(output.slice(output.startsWith('[') ? 0 : output.indexOf('\n[\n') + 1));
  const tarball = join(work, packed[0].filename);
  console.log(`packed ${packed[0].filename} (${packed[0].files.length} files)`);

  run('npx', ['publint', 'run', tarball, '--strict']);
  console.log('publint: ok');
  // node16 profile: engines is Node 20+, so node10 resolution (no "exports") is out of scope.
  run('npx', ['attw', tarball, '--profile', 'node16', '--format', 'table-flipped']);
  console.log('attw: ok');

  const app = join(work, 'app');
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true }));
  // `/otel` imports its optional peer: installed beside the tarball, as its users do. The other
  // subpaths take their peers as arguments and load without them.
  const otelApi = `@opentelemetry/api@${pkg.devDependencies['@opentelemetry/api']}`;
  run('npm', ['install', '--no-audit', '--no-fund', '--no-package-lock', tarball, otelApi], app);

  const subpaths = Object.keys(pkg.exports).filter((s) => s !== './package.json');
  const specifiers = subpaths.map((s) => (s === '.' ? pkg.name : `${pkg.name}/${s.slice(2)}`));
  // Each subpath must load and export something; the root must make a working decision.
  const esm = [
    ...specifiers.map(
      (s, i) =>
        `import * as m${i} from '${s}'; if (Object.keys(m${i}).length === 0) throw new Error('${s}: no exports');`,
    ),
    `import { FakeClock } from '${pkg.name}/testing';`,
    `const c = new FakeClock(5); c.advance(1); if (c.now() !== 6) throw new Error('FakeClock');`,
  ].join('\n');
  const cjs = [
    ...specifiers.map(
      (s) => `if (Object.keys(require('${s}')).length === 0) throw new Error('${s}: no exports');`,
    ),
    `const { FakeClock } = require('${pkg.name}/testing');`,
    `const c = new FakeClock(5); c.advance(1); if (c.now() !== 6) throw new Error('FakeClock');`,
  ].join('\n');
  const smoke = join(root, 'scripts', 'package-smoke.mjs');
  writeFileSync(join(app, 'esm.mjs'), esm);
  writeFileSync(join(app, 'cjs.cjs'), cjs);
  run('node', ['esm.mjs'], app);
  run('node', ['cjs.cjs'], app);
  // The smoke test exercises the public API end to end from the installed tarball.
  run('node', [smoke], app);
  console.log(`import from ESM and CJS: ok (${specifiers.join(', ')})`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
