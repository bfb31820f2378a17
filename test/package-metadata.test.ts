/** What the published package says of itself: licence, where it lives, the Node it needs. */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
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
    const packed = JSON.parse(
      execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
        cwd: root,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }),
    );
    const files = packed[0].files.map((f: { path: string }) => f.path);
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
});
