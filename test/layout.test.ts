/**
 * The layout: what each folder of src/ may import, and no import circle between any two files.
 * Core folders never import edge folders; the table below is the map in docs/development.md.
 * And no `as unknown as` without a comment that says why no correct typing can replace it.
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
  webhooks: ['errors', 'internal', 'clock.ts', 'limits', 'http', 'pagination'],
  // Edges: each public subpath, over the core.
  'index.ts': CORE,
  testing: ['errors', 'internal', 'clock.ts'],
  client: ['errors', 'internal', 'clock.ts', 'limits', 'http'],
  adapters: ['errors', 'internal', 'clock.ts', 'limits', 'http'],
  // webhooks: the receiver's seen-store contract, which the Redis seen-store fulfils.
  redis: ['errors', 'internal', 'clock.ts', 'limits', 'webhooks'],
  'queue-redis': ['errors', 'internal', 'clock.ts', 'webhooks'],
  postgres: ['errors', 'internal', 'clock.ts', 'webhooks'],
  otel: ['errors', 'internal', 'clock.ts', 'limits', 'webhooks'],
  // The portal page's browser code, over the client; built into webhooks/service/portal-files.ts.
  portal: ['errors', 'internal', 'clock.ts', 'limits', 'http', 'client'],
};
// The rooms of webhooks/ -> the rooms each may import, besides itself (every file is in a room).
const WEBHOOK_ROOMS: Readonly<Record<string, readonly string[]>> = {
  signing: [],
  delivery: ['signing'],
  events: ['signing'],
  subscriptions: ['events', 'delivery'],
  store: ['subscriptions', 'events', 'delivery'],
  service: ['store', 'subscriptions', 'events', 'delivery', 'signing'],
  receiver: ['signing'],
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

/** The room of webhooks/ a file is in (`webhooks/<room>/…`), or `undefined` outside webhooks/. */
function room(file: string): string | undefined {
  const [folder, inner, ...rest] = relative(SRC, file).split('/');
  if (folder !== 'webhooks') return undefined;
  return rest.length === 0 ? '' : inner;
}

/** The imports of one file that the tables forbid. */
function wrongImports(file: string, text: string): string[] {
  const from = area(file);
  const wrong: string[] = [];
  for (const spec of imports(text)) {
    if (spec.startsWith('.')) {
      const target = resolve(dirname(file), spec.replace(/\.js$/, '.ts'));
      const to = area(target);
      if (to !== from && !(MAY_IMPORT[from] ?? []).includes(to)) {
        wrong.push(`${relative(SRC, file)} imports ${spec} (${from} -> ${to})`);
      }
      const [fromRoom, toRoom] = [room(file), room(target)];
      if (
        fromRoom !== undefined &&
        toRoom !== undefined &&
        toRoom !== fromRoom &&
        !(WEBHOOK_ROOMS[fromRoom] ?? []).includes(toRoom)
      ) {
        wrong.push(
          `${relative(SRC, file)} imports ${spec} (webhooks/${fromRoom} -> webhooks/${toRoom})`,
        );
      }
    } else if (CORE.includes(from) && !CORE_PACKAGES.test(spec)) {
      wrong.push(`${relative(SRC, file)} imports the package ${spec}`);
    }
  }
  return wrong;
}

/**
 * The file import graph of some sources (path -> text): each file -> the files it imports,
 * re-exports or imports dynamically, type imports included. A relative specifier is resolved
 * against the importing file, `.js` read as `.ts`, a folder as its `index.ts`; packages and files
 * outside the sources are left out.
 */
function importGraph(sources: ReadonlyMap<string, string>): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const [file, text] of sources) {
    const targets = new Set<string>();
    for (const spec of imports(text)) {
      if (!spec.startsWith('.')) continue;
      const path = resolve(dirname(file), spec);
      const target = [path.replace(/\.js$/, '.ts'), `${path}.ts`, join(path, 'index.ts')].find(
        (candidate) => sources.has(candidate),
      );
      if (target !== undefined && target !== file) targets.add(target);
    }
    graph.set(file, [...targets]);
  }
  return graph;
}

/**
 * The import circles of a graph: its strongly connected components of two files or more
 * (Tarjan's algorithm), each sorted, in the order of their first file.
 */
function importCircles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const order = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  const visit = (file: string): void => {
    order.set(file, order.size);
    low.set(file, order.get(file) as number);
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file) ?? []) {
      if (!order.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file) as number, low.get(next) as number));
      } else if (onStack.has(next)) {
        low.set(file, Math.min(low.get(file) as number, order.get(next) as number));
      }
    }
    if (low.get(file) !== order.get(file)) return;
    const component: string[] = [];
    let member: string | undefined;
    do {
      member = stack.pop() as string;
      onStack.delete(member);
      component.push(member);
    } while (member !== file);
    if (component.length > 1) circles.push(component.sort());
  };
  for (const file of graph.keys()) if (!order.has(file)) visit(file);
  return circles.sort((a, b) => (a[0] as string).localeCompare(b[0] as string));
}

/** The lines of a source text with an `as unknown as` that no comment explains (1-based). */
function unexplainedCasts(text: string): number[] {
  const lines = text.split('\n');
  const found: number[] = [];
  lines.forEach((line, i) => {
    if (!/\bas unknown as\b/.test(line)) return;
    const before = (lines[i - 1] ?? '').trim();
    const explained =
      /\/\/|\/\*/.test(line) ||
      before.startsWith('//') ||
      before.startsWith('*') ||
      before.endsWith('*/');
    if (!explained) found.push(i + 1);
  });
  return found;
}

const files = sourceFiles(SRC);

describe('layout', () => {
  it('knows every folder of src/', () => {
    expect(new Set(files.map(area))).toEqual(new Set(Object.keys(MAY_IMPORT)));
  });

  it('every file of webhooks/ is in one of its rooms', () => {
    const rooms = new Set(files.map(room).filter((r) => r !== undefined));
    expect(rooms).toEqual(new Set(Object.keys(WEBHOOK_ROOMS)));
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
    expect(
      wrongImports(file, "export {\n  y,\n} from '../webhooks/delivery/create-deliverer.js';\n"),
    ).toHaveLength(1);
    expect(wrongImports(file, "const m = await import('../redis/index.js');\n")).toHaveLength(1);
    expect(wrongImports(file, "import express from 'express';\n")).toEqual([
      'limits/example.ts imports the package express',
    ]);
    expect(wrongImports(file, "import { z } from '../internal/describe.js';\n")).toEqual([]);
  });

  it('the check catches a webhooks room importing one above it, and passes one below', () => {
    const signing = join(SRC, 'webhooks/signing/example.ts');
    expect(wrongImports(signing, "import type { Job } from '../delivery/job.js';\n")).toEqual([
      'webhooks/signing/example.ts imports ../delivery/job.js (webhooks/signing -> webhooks/delivery)',
    ]);
    const subscriptions = join(SRC, 'webhooks/subscriptions/example.ts');
    expect(wrongImports(subscriptions, "import { x } from '../store/outbox.js';\n")).toHaveLength(
      1,
    );
    expect(wrongImports(subscriptions, "import { y } from '../delivery/attempt.js';\n")).toEqual(
      [],
    );
    expect(
      wrongImports(join(SRC, 'webhooks/loose.ts'), "import { y } from './delivery/attempt.js';\n"),
    ).toHaveLength(1);
  });

  it('no two files of src/ import each other, directly or through others (type imports included)', () => {
    const graph = importGraph(new Map(files.map((file) => [file, readFileSync(file, 'utf8')])));
    const circles = importCircles(graph).map((circle) =>
      circle.map((file) => relative(SRC, file)).join(', '),
    );
    expect(circles).toEqual([]);
  });

  it('the circle check finds a circle, through a type import, a re-export or a dynamic import', () => {
    const graph = (sources: Record<string, string>) =>
      importGraph(new Map(Object.entries(sources).map(([file, text]) => [`/src/${file}`, text])));
    // a -> b -> c -> a, with d hanging off it and e on its own.
    const circled = graph({
      'a.ts': "import type { B } from './b.js';\n",
      'b.ts': "export {\n  c,\n} from './deep/c.js';\n",
      'deep/c.ts': "const a = await import('../a.js');\n",
      'd.ts': "import { a } from './a.js';\nimport { e } from './e';\n",
      'e.ts': "import { readFileSync } from 'node:fs';\n",
    });
    expect(importCircles(circled)).toEqual([['/src/a.ts', '/src/b.ts', '/src/deep/c.ts']]);
    // Two circles, one through a folder's index.
    const two = graph({
      'a.ts': "import { b } from './b.js';\n",
      'b.ts': "import { a } from './a.js';\n",
      'c/index.ts': "import { d } from '../d.js';\n",
      'd.ts': "import { c } from './c/index.js';\n",
    });
    expect(importCircles(two)).toEqual([
      ['/src/a.ts', '/src/b.ts'],
      ['/src/c/index.ts', '/src/d.ts'],
    ]);
    // The same files in a line and a diamond, and a file that imports itself: no circle.
    const none = graph({
      'a.ts': "import { b } from './b.js';\nimport { c } from './deep/c.js';\n",
      'b.ts': "import type { C } from './deep/c.js';\n",
      'deep/c.ts': "import { d } from '../d.js';\nexport * from './c.js';\n",
      'd.ts': "import { x } from 'some-package';\n",
    });
    expect(importCircles(none)).toEqual([]);
  });

  it('every `as unknown as` in src/ has a comment on its line or the line before saying why', () => {
    const unexplained = files.flatMap((file) =>
      unexplainedCasts(readFileSync(file, 'utf8')).map((line) => `${relative(SRC, file)}:${line}`),
    );
    expect(unexplained).toEqual([]);
  });

  it('the cast check finds a cast with no comment, and passes one with a comment', () => {
    expect(unexplainedCasts('const a = 1;\nconst b = a as unknown as string;\n')).toEqual([2]);
    // A comment two lines up, or code on the line before, explains nothing.
    expect(unexplainedCasts('// why\nconst a = 1;\nconst b = a as unknown as string;\n')).toEqual([
      3,
    ]);
    expect(unexplainedCasts('const b = x as unknown as string; // why\n')).toEqual([]);
    expect(
      unexplainedCasts('  // why it cannot go\n  const b = x as unknown as string;\n'),
    ).toEqual([]);
    expect(unexplainedCasts('/** why */\nconst b = x as unknown as string;\n')).toEqual([]);
    expect(unexplainedCasts('const b = x as string;\nconst c = y as unknown;\n')).toEqual([]);
  });
});
