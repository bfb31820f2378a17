/** The examples of README.md and docs/*.md: each compiles under strict, and those marked run. */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  checkSnippets,
  documentationFiles,
  type Snippet,
  type SnippetProblem,
} from '../scripts/check-snippets.js';

const root = resolve(import.meta.dirname, '..');
const FIXTURE = 'test/fixtures/snippets/broken.md';

describe('documentation snippets', () => {
  let scratch = '';
  let snippets: Snippet[] = [];
  let problems: SnippetProblem[] = [];

  // One program compiles the documentation and the fixture together: it is the slow part.
  beforeAll(() => {
    mkdirSync(join(root, '.tmp'), { recursive: true });
    scratch = mkdtempSync(join(root, '.tmp', 'snippets-'));
    const files = [...documentationFiles(root), FIXTURE];
    ({ snippets, problems } = checkSnippets({ root, files, scratch }));
  }, 180_000);
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it('compiles every ts block of README.md and docs/*.md under strict, and runs those marked run', () => {
    const documented = snippets.filter((s) => s.file !== FIXTURE);
    expect(documented.filter((s) => s.file === 'README.md').length).toBeGreaterThan(10);
    const readmeRuns = documented.filter((s) => s.file === 'README.md' && s.run);
    expect(readmeRuns.some((s) => s.code.includes('new FakeClock('))).toBe(true);
    const found = problems
      .filter((p) => p.file !== FIXTURE)
      .map((p) => `${p.file}:${p.line}: ${p.message}`);
    expect(found).toEqual([]);
  });

  it('refuses, at its Markdown line, a block that does not compile, one that fails when run, and a directive with no block', () => {
    const found = problems.filter((p) => p.file === FIXTURE);
    expect(found.map((p) => [p.line, p.message.split(/[:\n]/)[0]])).toEqual([
      [19, 'TS2532'],
      [26, 'run failed (exit 1)'],
      [37, 'TS2304'],
      [40, 'snippet directive not followed by a ts block'],
    ]);
    expect(found[1]?.message).toContain('1000 !== 999');
  });
});
