/**
 * The package where users run it: each portable subpath's module graph in the build imports none
 * of Node's modules, and the portable suite (test/runtimes/suite.ts) passes in Node, Bun, Deno and
 * workerd, each run printing its count of passed cases. workerd runs it without `nodejs_compat`,
 * and its global scope refuses timers, I/O and random numbers, so the suite's objects made at load
 * show that making them needs none. The embedded default, the webhook service on PGlite in memory
 * and on a data folder, passes its suite (test/runtimes/embedded-suite.ts) in Node, Bun and Deno.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buildEmbedded,
  buildPortable,
  EMBEDDED_RUNTIMES,
  entryOf,
  nodeImportsOf,
  PORTABLE_SUBPATHS,
  type PortableBuild,
  RUNTIMES,
  type RuntimeRun,
  runIn,
} from '../support/runtimes.js';
import { EMBEDDED_CASES, EMBEDDED_RESULTS_MARKER } from './embedded-suite.js';
import { PORTABLE_CASES } from './suite.js';

let build: PortableBuild | undefined;
let embedded: string | undefined;

function built(): PortableBuild {
  if (build === undefined) throw new Error('the build failed: see the hook before');
  return build;
}

beforeAll(async () => {
  build = await buildPortable();
  embedded = await buildEmbedded(build);
}, 180_000);

afterAll(() => {
  build?.remove();
});

describe('the build of the portable subpaths', () => {
  it.each(PORTABLE_SUBPATHS)(
    '%s imports none of Node’s modules, anywhere in its graph',
    (subpath) => {
      expect(nodeImportsOf(entryOf(built().dist, subpath))).toEqual({});
    },
  );

  it('the walk finds Node’s modules where the subpaths say so (node:http, pg’s folder lock)', () => {
    expect(Object.keys(nodeImportsOf(entryOf(built().dist, './node')))).toContain('node:http');
    expect(Object.keys(nodeImportsOf(entryOf(built().dist, './postgres')))).toEqual(
      expect.arrayContaining(['node:crypto', 'node:fs']),
    );
  });
});

/** The run's results are the suite's cases, in order, every one passed; the count is printed. */
function expectEveryCase(label: string, run: RuntimeRun, cases: readonly string[]): void {
  const passed = run.results.filter((result) => result.ok).length;
  console.log(
    `${label} in ${run.runtime} (${run.version}): ${passed} of ${cases.length} cases passed`,
  );
  expect(
    run.results.map((result) => result.name),
    run.output,
  ).toEqual(cases);
  expect(run.results.filter((result) => !result.ok)).toEqual([]);
}

describe('the portable suite', () => {
  it.each(RUNTIMES)(
    'passes every case in %s',
    async (runtime) => {
      expectEveryCase('portable suite', await runIn(runtime, built().bundle), PORTABLE_CASES);
    },
    180_000,
  );
});

describe('the embedded default (the service on PGlite)', () => {
  it.each(EMBEDDED_RUNTIMES)(
    'passes every case in %s',
    async (runtime) => {
      if (embedded === undefined) throw new Error('the build failed: see the hook before');
      const run = await runIn(runtime, embedded, EMBEDDED_RESULTS_MARKER);
      expectEveryCase('embedded suite', run, EMBEDDED_CASES);
    },
    180_000,
  );
});
