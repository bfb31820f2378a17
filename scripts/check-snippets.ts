/**
 * Compiles every ```ts block of README.md and docs/*.md under the repository's strict tsconfig,
 * against the package's source (`api-conventions` and its subpaths are mapped to `src/`, so it
 * runs before the build), and runs the blocks marked to run. `npm run check:snippets` prints
 * each problem at its Markdown line; `test/docs-snippets.test.ts` runs the same check in
 * `npm test`.
 *
 * A block may be preceded by a directive, an HTML comment that Markdown renders as nothing:
 *
 *     <!-- snippet
 *     declare const clientId: string;
 *     -->
 *
 * Its lines after the first (the prelude) are put before the block: they declare what the
 * surrounding text says the block has (a limiter from a block above, the request of a
 * handler), never more. `<!-- snippet run ... -->` also runs the block with tsx; it passes when
 * it exits with 0 within 60 s.
 * @module
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';

/** One TypeScript block of a Markdown file. */
export interface Snippet {
  /** The Markdown file, relative to the repository root. */
  readonly file: string;
  /** The Markdown line of the block's first line of code (1-based). */
  readonly line: number;
  /** The block's code, as shown. */
  readonly code: string;
  /** The directive's prelude ('' without one). */
  readonly prelude: string;
  /** The Markdown line of the prelude's first line. */
  readonly preludeLine: number;
  /** Whether the directive asks to run the block. */
  readonly run: boolean;
}

/** A block that does not compile or does not run, at its Markdown line. */
export interface SnippetProblem {
  readonly file: string;
  readonly line: number;
  readonly message: string;
}

const FENCE = /^\s*```(\S*)/;
const TYPESCRIPT = new Set(['ts', 'typescript']);
const DIRECTIVE = /^\s*<!--\s*snippet\b(.*)$/;
const RUN_TIMEOUT_MS = 60_000;
const UNUSED = 'snippet directive not followed by a ts block';

/**
 * The Markdown files whose blocks are checked: README.md and every docs/*.md, present and future.
 * @param root - the repository root
 */
export function documentationFiles(root: string): string[] {
  const docs = readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => join('docs', name));
  return ['README.md', ...docs];
}

interface Directive {
  readonly run: boolean;
  readonly prelude: string;
  /** The line of the comment's opening. */
  readonly line: number;
}

/** Reads a Markdown text line by line: directives, fenced blocks, and the text between. */
class MarkdownReader {
  readonly snippets: Snippet[] = [];
  readonly problems: SnippetProblem[] = [];
  #lines: string[];
  #directive: Directive | undefined;

  constructor(
    readonly file: string,
    text: string,
  ) {
    this.#lines = text.split('\n');
  }

  read(): this {
    for (let i = 0; i < this.#lines.length; i = this.#step(i) + 1);
    this.#dropDirective();
    return this;
  }

  /** Reads what starts at line index `i`; returns the index of its last line. */
  #step(i: number): number {
    const line = this.#lines[i] ?? '';
    const directive = DIRECTIVE.exec(line);
    if (directive) return this.#readDirective(i, directive[1] ?? '');
    const fence = FENCE.exec(line);
    if (fence) return this.#readBlock(i, fence[1] ?? '');
    if (line.trim() !== '') this.#dropDirective();
    return i;
  }

  #readDirective(i: number, head: string): number {
    this.#dropDirective();
    const end = this.#lines.findIndex((l, j) => j >= i && l.includes('-->'));
    if (end < 0) {
      this.problems.push({
        file: this.file,
        line: i + 1,
        message: 'snippet directive never closed (-->)',
      });
      return this.#lines.length;
    }
    const prelude = end > i ? this.#lines.slice(i + 1, end).join('\n') : '';
    const run = head.replace('-->', '').trim().split(/\s+/).includes('run');
    this.#directive = { run, prelude, line: i + 1 };
    return end;
  }

  #readBlock(i: number, language: string): number {
    const close = this.#lines.findIndex((l, j) => j > i && l.trimStart().startsWith('```'));
    const end = close < 0 ? this.#lines.length : close;
    if (!TYPESCRIPT.has(language)) {
      this.#dropDirective();
      return end;
    }
    const directive = this.#directive;
    this.#directive = undefined;
    this.snippets.push({
      file: this.file,
      line: i + 2,
      code: this.#lines.slice(i + 1, end).join('\n'),
      prelude: directive?.prelude ?? '',
      preludeLine: (directive?.line ?? 0) + 1,
      run: directive?.run ?? false,
    });
    return end;
  }

  /** A directive that no TypeScript block follows is a problem: a prelude is never lost. */
  #dropDirective(): void {
    if (this.#directive)
      this.problems.push({ file: this.file, line: this.#directive.line, message: UNUSED });
    this.#directive = undefined;
  }
}

/**
 * The TypeScript blocks of one Markdown text, each with the directive just before it, and the
 * directives that no TypeScript block follows.
 * @param file - the file's name, for the snippets and problems
 * @param text - the Markdown
 */
export function extractSnippets(
  file: string,
  text: string,
): { snippets: Snippet[]; problems: SnippetProblem[] } {
  const { snippets, problems } = new MarkdownReader(file, text).read();
  return { snippets, problems };
}

/** Where each line of a written snippet came from. */
interface Written {
  readonly snippet: Snippet;
  readonly path: string;
  readonly preludeLines: number;
}

/**
 * The package's subpaths mapped to their source files: `./dist/adapters/node.js` is built from
 * `src/adapters/node.ts`.
 */
function sourcePaths(root: string, scratch: string): Record<string, string[]> {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    name: string;
    exports: Record<string, string | { import?: { default?: string } }>;
  };
  const paths: Record<string, string[]> = {};
  for (const [subpath, target] of Object.entries(pkg.exports)) {
    const built = typeof target === 'string' ? undefined : target.import?.default;
    if (built === undefined) continue;
    const source = built.replace(/^\.\/dist\//, 'src/').replace(/\.js$/, '.ts');
    const name = subpath === '.' ? pkg.name : `${pkg.name}/${subpath.slice(2)}`;
    paths[name] = [relative(scratch, join(root, source))];
  }
  return paths;
}

/** Writes each snippet as a module of its own, and the tsconfig that compiles and runs them. */
function writeScratch(root: string, scratch: string, snippets: readonly Snippet[]): Written[] {
  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(scratch, { recursive: true });
  const config = {
    extends: relative(scratch, join(root, 'tsconfig.json')),
    compilerOptions: { paths: sourcePaths(root, scratch) },
    include: ['*.ts'],
  };
  writeFileSync(join(scratch, 'tsconfig.json'), JSON.stringify(config, null, 2));
  return snippets.map((snippet) => {
    const name = `${snippet.file.replace(/[^A-Za-z0-9]+/g, '-')}-${snippet.line}.ts`;
    const path = join(scratch, name);
    const prelude = snippet.prelude === '' ? '' : `${snippet.prelude}\n`;
    // `export {}` makes every block a module: no block sees another's names.
    writeFileSync(path, `${prelude}${snippet.code}\nexport {};\n`);
    return { snippet, path, preludeLines: prelude === '' ? 0 : prelude.split('\n').length - 1 };
  });
}

function markdownLine(written: Written, line: number): number {
  const { snippet, preludeLines } = written;
  return line < preludeLines ? snippet.preludeLine + line : snippet.line + line - preludeLines;
}

/** One program of every snippet, compiled with the scratch tsconfig (the repository's, mapped). */
function snippetProgram(scratch: string, written: readonly Written[]): ts.Program {
  const read = ts.readConfigFile(join(scratch, 'tsconfig.json'), ts.sys.readFile);
  const parsed = ts.parseJsonConfigFileContent(read.config, ts.sys, scratch);
  return ts.createProgram(
    written.map((w) => w.path),
    parsed.options,
  );
}

/** The type errors of every snippet, and the snippets that have one. */
function typeCheck(
  scratch: string,
  written: readonly Written[],
): { problems: SnippetProblem[]; failed: Set<Written> } {
  const program = snippetProgram(scratch, written);
  const problems: SnippetProblem[] = [];
  const failed = new Set<Written>();
  const text = (d: ts.Diagnostic) =>
    `TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
  for (const d of [...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics()]) {
    problems.push({ file: '(compiler)', line: 0, message: text(d) });
  }
  // Only the snippets are checked: the source is type-checked by `npm run typecheck`.
  for (const w of written) {
    const source = program.getSourceFile(w.path);
    if (source === undefined) continue;
    const found = [
      ...program.getSyntacticDiagnostics(source),
      ...program.getSemanticDiagnostics(source),
    ];
    if (found.length > 0) failed.add(w);
    for (const d of found) {
      const { line } = source.getLineAndCharacterOfPosition(d.start ?? 0);
      problems.push({ file: w.snippet.file, line: markdownLine(w, line), message: text(d) });
    }
  }
  return { problems, failed };
}

function runMarked(root: string, scratch: string, written: readonly Written[]): SnippetProblem[] {
  const tsx = join(root, 'node_modules', 'tsx', 'dist', 'cli.mjs');
  const problems: SnippetProblem[] = [];
  for (const w of written) {
    if (!w.snippet.run) continue;
    const result = spawnSync(
      process.execPath,
      [tsx, '--tsconfig', join(scratch, 'tsconfig.json'), w.path],
      { cwd: root, encoding: 'utf8', timeout: RUN_TIMEOUT_MS },
    );
    if (result.status === 0) continue;
    const why = result.error ? String(result.error) : `exit ${result.status ?? result.signal}`;
    const output = `${result.stdout}${result.stderr}`.trim().split('\n').slice(-15).join('\n');
    problems.push({
      file: w.snippet.file,
      line: w.snippet.line,
      message: `run failed (${why}):\n${output}`,
    });
  }
  return problems;
}

/** Options of {@link checkSnippets}. */
export interface CheckSnippetsOptions {
  /** The repository root: its tsconfig.json, package.json, src/ and node_modules. */
  readonly root: string;
  /** The Markdown files, relative to `root`. @defaultValue {@link documentationFiles} */
  readonly files?: readonly string[];
  /** The scratch folder, emptied first. @defaultValue `.tmp/snippets` under the root */
  readonly scratch?: string;
}

/**
 * Extracts, type-checks and runs the snippets; every problem found, none when all is well.
 * @param options - the root, the files and the scratch folder
 */
export function checkSnippets(options: CheckSnippetsOptions): {
  snippets: Snippet[];
  problems: SnippetProblem[];
} {
  const { root } = options;
  const files = options.files ?? documentationFiles(root);
  const scratch = options.scratch ?? join(root, '.tmp', 'snippets');
  const snippets: Snippet[] = [];
  const problems: SnippetProblem[] = [];
  for (const file of files) {
    const found = extractSnippets(file, readFileSync(join(root, file), 'utf8'));
    snippets.push(...found.snippets);
    problems.push(...found.problems);
  }
  const written = writeScratch(root, scratch, snippets);
  const checked = typeCheck(scratch, written);
  problems.push(...checked.problems);
  // A block that does not compile is not run: its errors are already reported.
  problems.push(
    ...runMarked(
      root,
      scratch,
      written.filter((w) => !checked.failed.has(w)),
    ),
  );
  problems.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line);
  return { snippets, problems };
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const root = resolve(dirname(process.argv[1]), '..');
  const files = process.argv.slice(2);
  const { snippets, problems } = checkSnippets(files.length > 0 ? { root, files } : { root });
  for (const p of problems) console.error(`${p.file}:${p.line}: ${p.message}`);
  const ran = snippets.filter((s) => s.run).length;
  console.log(
    `${snippets.length} snippets checked, ${ran} run: ${problems.length === 0 ? 'ok' : `${problems.length} problems`}`,
  );
  process.exitCode = problems.length === 0 ? 0 : 1;
}
