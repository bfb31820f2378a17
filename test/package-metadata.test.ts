/**
 * What the published package says of itself: licence, where it lives, the Node it needs, that a
 * pack builds what it ships, and the README's install table of subpaths and their peers.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const readme = readFileSync(join(root, 'README.md'), 'utf8');

describe('package metadata', () => {
  it('ships an MIT LICENSE, as package.json says', () => {
    expect(pkg.license).toBe('MIT');
    const license = readFileSync(join(root, 'LICENSE'), 'utf8');
    expect(license).toMatch(/^MIT License\n\nCopyright \(c\) \d{4} api-conventions contributors\n/);
    // Packed from a folder of the package's own package.json and LICENSE: what npm adds beside
    // "files" does not depend on dist/, which the package checks may be rebuilding meanwhile.
    const folder = mkdtempSync(join(tmpdir(), 'pack-'));
    let packed: { files: { path: string }[] }[];
    try {
      copyFileSync(join(root, 'package.json'), join(folder, 'package.json'));
      copyFileSync(join(root, 'LICENSE'), join(folder, 'LICENSE'));
      packed = JSON.parse(
        execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
          cwd: folder,
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'ignore'],
        }),
      );
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
    const files = packed[0]?.files.map((f) => f.path);
    expect(files).toContain('LICENSE');
  });

  it('names its repository, home page and issue tracker', () => {
    const repo = 'github.com/api-conventions/api-conventions';
    expect(pkg.repository).toEqual({ type: 'git', url: `git+https://${repo}.git` });
    expect(pkg.homepage).toBe(`https://${repo}#readme`);
    expect(pkg.bugs).toEqual({ url: `https://${repo}/issues` });
  });

  it('needs the Node version the README names', () => {
    const [, version] = /^>=(\d+\.\d+)$/.exec(pkg.engines.node) ?? [];
    expect(version).toBeDefined();
    expect(readme).toContain(`Node ${version} or later`);
    // Every Node version the README names is that one.
    const named = [...readme.matchAll(/Node (\d+(?:\.\d+)*)/g)].map((m) => m[1]);
    expect(new Set(named)).toEqual(new Set([version]));
  });

  it('builds dist before it is packed: a pack from a fresh clone ships the build', () => {
    expect(pkg.files).toEqual(['dist']);
    expect(pkg.scripts.prepack).toBe('npm run build');
    expect(pkg.scripts.build).toBe('tsup');
  });

  it('has an install section before the walk-through, whose table lists every subpath and every peer', () => {
    const start = readme.indexOf('## Install\n');
    expect(start).toBeGreaterThan(-1);
    expect(start).toBeLessThan(readme.indexOf('## Try it\n'));
    const section = readme.slice(start, readme.indexOf('\n## ', start + 1));
    expect(section).toContain('npm install api-conventions');
    expect(section).toContain('ES modules and CommonJS');
    const rows = section
      .split('\n')
      .filter((line) => line.startsWith('| `'))
      .map((line) => line.split('|').map((cell) => cell.trim()));
    const table = new Map(
      rows.map((cells) => [
        cells[1]!.replaceAll('`', ''),
        [...cells[3]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!),
      ]),
    );
    const subpaths = Object.keys(pkg.exports)
      .filter((s) => s !== './package.json')
      .map((s) => (s === '.' ? pkg.name : `${pkg.name}/${s.slice(2)}`));
    expect([...table.keys()].sort()).toEqual(subpaths.sort());
    const named = new Set([...table.values()].flat());
    expect([...named].sort()).toEqual(Object.keys(pkg.peerDependencies).sort());
    // Every peer is optional: the table says when it is needed.
    for (const peer of named) expect(pkg.peerDependenciesMeta[peer]).toEqual({ optional: true });
    // A subpath with no peer says so.
    for (const [subpath, peers] of table) {
      if (peers.length === 0) expect(rows.find((c) => c[1] === `\`${subpath}\``)?.[3]).toBe('none');
    }
  });
});
