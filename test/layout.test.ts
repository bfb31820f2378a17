/**
 * The layout: what each folder of src/ may import. Core folders never import edge folders; the
 * table below is the map in docs/development.md.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = resolve(import.meta.dirname, '../src');

// Folder (or root file) -> the folders and root files it may import, besides itself.
const CORE = ['errors', 'internal', 'clock.ts', 'limits', 'http', 'pagination', 'webhooks'];
const MAY_IMPORT: Readonly<Record<string, readonly string[]>> = {
  errors: [],
  internal: ['errors'],
  'clock.ts': ['errors', 'internal'],
  limits: ['errors', 'internal', 'clock.ts'],
  http: ['errors', 'internal', 'clock.ts', 'limits'],
  pagination: ['errors', 'internal', 'clock.ts', 'http'],
  webhooks: ['errors', 'internal', 'clock.ts', 'http', 'pagination'],
  // Edges: each public subpath, over the core.
  'index.ts': CORE,
  testing: ['errors', 'internal', 'clock.ts'],
  client: ['errors', 'internal', 'clock.ts', 'limits', 'http'],
  adapters: ['errors', 'internal', 'clock.ts', 'limits', 'http'],
  redis: ['errors', 'internal', 'clock.ts', 'limits'],
  'queue-redis': ['errors', 'internal', 'clock.ts', 'webhooks'],
  postgres: ['errors', 'internal', 'clock.ts', 'webhooks'],
  otel: ['errors', 'internal', 'clock.ts', 'limits', 'webhooks'],
};
// Packages the core may import: Node's own modules and the one runtime dependency.
const CORE_PACKAGES = /^(node:.+|ipaddr\.js)$/;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(join(dir, entry.name))
      : entry.name.endsWith('.ts')
        ? [join(dir, entry.name)]
        : [],
  );
}

/** The folder of src/ a file is in, or its name for a file at the root. */
function area(file: string): string {
  return relative(SRC, file).split('/')[0] ?? '';
}

/** The modules a source text imports or re-exports, statically or dynamically. */
function imports(text: string): string[] {
  const statics = text.matchAll(/^(?:import|export)\b[^;]*?\bfrom\s*'([^']+)'/gms);
  const bare = text.matchAll(/^import\s*'([^']+)'/gm);
  const dynamics = text.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g);
  return [...statics, ...bare, ...dynamics].map((m) => m[1] as string);
}

/** The imports of one file that the table forbids. */
function wrongImports(file: string, text: string): string[] {
  const from = area(file);
  const wrong: string[] = [];
  for (const spec of imports(text)) {
    if (spec.startsWith('.')) {
      const to = area(resolve(dirname(file), spec.replace(/\.js$/, '.ts')));
      if (to !== from && !(MAY_IMPORT[from] ?? []).includes(to)) {
        wrong.push(`${relative(SRC, file)} imports ${spec} (${from} -> ${to})`);
      }
    } else if (CORE.includes(from) && !CORE_PACKAGES.test(spec)) {
      wrong.push(`${relative(SRC, file)} imports the package ${spec}`);
    }
  }
  return wrong;
}

const files = sourceFiles(SRC);

describe('layout', () => {
  it('knows every folder of src/', () => {
    expect(new Set(files.map(area))).toEqual(new Set(Object.keys(MAY_IMPORT)));
  });

  it('no folder imports one it may not (core folders never import edge folders)', () => {
    const wrong = files.flatMap((file) => wrongImports(file, readFileSync(file, 'utf8')));
    expect(wrong).toEqual([]);
  });

  it('the check catches a wrong-way import, a wrong-way re-export and a package in the core', () => {
    const file = join(SRC, 'limits/example.ts');
    expect(wrongImports(file, "import { x } from '../adapters/express.js';\n")).toEqual([
      'limits/example.ts imports ../adapters/express.js (limits -> adapters)',
    ]);
    expect(wrongImports(file, "export {\n  y,\n} from '../webhooks/delivery.js';\n")).toHaveLength(
      1,
    );
    expect(wrongImports(file, "const m = await import('../redis/index.js');\n")).toHaveLength(1);
    expect(wrongImports(file, "import express from 'express';\n")).toEqual([
      'limits/example.ts imports the package express',
    ]);
    expect(wrongImports(file, "import { z } from '../internal/describe.js';\n")).toEqual([]);
  });
});
