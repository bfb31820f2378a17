/**
 * The runtimes of the portable suite: the package built as tsup.config.ts builds it (ES modules,
 * without declarations), the import graph of each portable subpath in that build, the suite
 * bundled against it, and the bundle run in Node, Bun, Deno and workerd, each from its npm
 * package's platform binary (nothing is downloaded); and the embedded suite, bundled against the
 * same build, run in Node, Bun and Deno.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire, isBuiltin } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { build, type Options } from 'tsup';
import tsupConfig from '../../tsup.config.js';
import { type CaseResult, RESULTS_MARKER } from '../runtimes/suite.js';

const ROOT = resolve(import.meta.dirname, '../..');
const require = createRequire(import.meta.url);

/** The subpaths that must load on every runtime. */
export const PORTABLE_SUBPATHS = ['.', './client', './hono', './testing'] as const;

/** The runtimes the suite runs in. */
export const RUNTIMES = ['node', 'bun', 'deno', 'workerd'] as const;
/** One of {@link RUNTIMES}. */
export type Runtime = (typeof RUNTIMES)[number];

/** The runtimes the embedded default runs in: PGlite needs a file system, which workerd has not. */
export const EMBEDDED_RUNTIMES = ['node', 'bun', 'deno'] as const;

/** The build and the bundle, in a folder of the run's own. */
export interface PortableBuild {
  /** The folder of the build (the package's dist/). */
  readonly dist: string;
  /** The folder of the bundled runners. */
  readonly bundle: string;
  /** Remove both. */
  remove(): void;
}

interface PackageJson {
  readonly exports: Record<string, { readonly import: { readonly default: string } } | string>;
}

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as PackageJson;

/**
 * The file of the build that a subpath's `import` names.
 * @param dist - the folder of the build
 */
export function entryOf(dist: string, subpath: string): string {
  const target = pkg.exports[subpath];
  if (target === undefined || typeof target === 'string') throw new Error(`no export ${subpath}`);
  return join(dist, relative('dist', target.import.default));
}

const IMPORT = /(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\s*\(\s*)["']([^"']+)["']/g;

/**
 * Node's modules imported anywhere in the graph of an ES module of the build, each by its `node:`
 * name with the files that import it (tsup writes them without the prefix).
 * @param entry - the module the graph starts from
 */
export function nodeImportsOf(entry: string): Record<string, string[]> {
  const found: Record<string, string[]> = {};
  const seen = new Set<string>();
  const stack = [entry];
  while (stack.length > 0) {
    const file = stack.pop() as string;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const [, specifier] of readFileSync(file, 'utf8').matchAll(IMPORT)) {
      if (specifier === undefined) continue;
      if (specifier.startsWith('.')) stack.push(resolve(dirname(file), specifier));
      else if (specifier.startsWith('node:') || isBuiltin(specifier)) {
        const name = specifier.startsWith('node:') ? specifier : `node:${specifier}`;
        const importers = found[name] ?? [];
        importers.push(relative(dirname(entry), file));
        found[name] = importers;
      }
    }
  }
  return found;
}

const RUNNER = `
import * as root from 'api-conventions';
import * as client from 'api-conventions/client';
import * as honoAdapter from 'api-conventions/hono';
import * as testing from 'api-conventions/testing';
import * as hono from 'hono';
import { makeAtLoad, RESULTS_MARKER, runPortableSuite } from ${JSON.stringify(join(ROOT, 'test/runtimes/suite.ts'))};
const modules = { root, testing, client, honoAdapter, hono };
// Made at load, in a Worker's global scope: no timer, I/O or random number may be needed.
const made = makeAtLoad(modules);
export async function run() {
  const results = await runPortableSuite(modules, made);
  return RESULTS_MARKER + JSON.stringify(results);
}
`;

// Node, Bun and Deno run a script; workerd runs a Worker's test handler.
const SCRIPT = `import { run } from './runner.mjs';\nconsole.log(await run());\n`;
const WORKER = `import { run } from './runner.mjs';
export default {
  async test() {
    console.log(await run());
  },
};
`;

/** The package built, and the suite bundled against the build, in a temporary folder. */
export async function buildPortable(): Promise<PortableBuild> {
  const base = join(tmpdir(), `api-conventions-runtimes-${process.pid}-${Date.now()}`);
  const dist = join(base, 'dist');
  const bundle = join(base, 'bundle');
  const sources = join(base, 'sources');
  mkdirSync(sources, { recursive: true });
  const config = tsupConfig as Options;
  await build({
    ...config,
    config: false,
    format: ['esm'],
    dts: false,
    sourcemap: false,
    outDir: dist,
    silent: true,
  });
  writeFileSync(join(sources, 'runner.mjs'), RUNNER);
  writeFileSync(join(sources, 'script.mjs'), SCRIPT);
  writeFileSync(join(sources, 'worker.mjs'), WORKER);
  await bundleRunner(join(sources, 'runner.mjs'), bundle, dist, {
    platform: 'neutral',
    noExternal: [/.*/],
    esbuildOptions(options) {
      options.mainFields = ['module', 'main'];
      // The build is outside the repository: its packages (hono, ipaddr.js) are the repository's.
      options.nodePaths = [join(ROOT, 'node_modules')];
      options.conditions = ['workerd', 'worker', 'import', 'default'];
    },
  });
  writeFileSync(join(bundle, 'script.mjs'), SCRIPT);
  writeFileSync(join(bundle, 'worker.mjs'), WORKER);
  writeFileSync(
    join(bundle, 'config.capnp'),
    `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [(name = "main", worker = .worker)],
);
const worker :Workerd.Worker = (
  modules = [
    (name = "worker", esModule = embed "worker.mjs"),
    (name = "./runner.mjs", esModule = embed "runner.mjs"),
  ],
  compatibilityDate = "2026-01-01",
);
`,
  );
  return { dist, bundle, remove: () => rmSync(base, { recursive: true, force: true }) };
}

/**
 * Bundle a runner into `outDir` as `runner.mjs`, `api-conventions` and its subpaths taken from the
 * build in `dist`; `options` say for which platform and what stays outside.
 */
async function bundleRunner(
  runner: string,
  outDir: string,
  dist: string,
  options: Pick<Options, 'platform' | 'noExternal' | 'external' | 'esbuildOptions'>,
): Promise<void> {
  await build({
    config: false,
    entry: { runner },
    format: ['esm'],
    outExtension: () => ({ js: '.mjs' }),
    target: 'es2022',
    outDir,
    dts: false,
    sourcemap: false,
    splitting: false,
    silent: true,
    ...options,
    esbuildPlugins: [
      {
        name: 'api-conventions from the build',
        setup(plugin) {
          plugin.onResolve({ filter: /^api-conventions(\/.*)?$/ }, (args) => ({
            path: entryOf(dist, `.${args.path.slice('api-conventions'.length)}`),
          }));
        },
      },
    ],
  });
}

const EMBEDDED_RUNNER = `
import * as pglite from '@electric-sql/pglite';
import * as root from 'api-conventions';
import * as postgres from 'api-conventions/postgres';
import { EMBEDDED_RESULTS_MARKER, runEmbeddedSuite } from ${JSON.stringify(join(ROOT, 'test/runtimes/embedded-suite.ts'))};
export async function run() {
  // A data folder of this run's own, beside the runner.
  const folder = import.meta.dirname + '/data-' + Date.now() + '-' + Math.random().toString(36).slice(2);
  const results = await runEmbeddedSuite({ root, postgres, pglite }, folder);
  return EMBEDDED_RESULTS_MARKER + JSON.stringify(results);
}
`;

/**
 * The embedded suite (test/runtimes/embedded-suite.ts) bundled against the build, PGlite left to
 * the repository's node_modules as a user's install has it.
 * @returns the folder of its runner, beside the portable bundle
 */
export async function buildEmbedded(portable: PortableBuild): Promise<string> {
  const folder = join(dirname(portable.bundle), 'embedded');
  const sources = join(dirname(portable.bundle), 'embedded-sources');
  mkdirSync(sources, { recursive: true });
  writeFileSync(join(sources, 'runner.mjs'), EMBEDDED_RUNNER);
  await bundleRunner(join(sources, 'runner.mjs'), folder, portable.dist, {
    platform: 'node',
    // All but PGlite, whose WebAssembly and data files load from its own package.
    noExternal: [/^(?!@electric-sql\/pglite)/],
    external: ['@electric-sql/pglite'],
    esbuildOptions(options) {
      options.nodePaths = [join(ROOT, 'node_modules')];
    },
  });
  writeFileSync(join(folder, 'script.mjs'), SCRIPT);
  // What a user's package declares (Deno resolves only declared packages from node_modules).
  writeFileSync(
    join(folder, 'package.json'),
    JSON.stringify({
      type: 'module',
      private: true,
      dependencies: { '@electric-sql/pglite': '*' },
    }),
  );
  symlinkSync(join(ROOT, 'node_modules'), join(folder, 'node_modules'), 'dir');
  return folder;
}

// The binary of an npm package's platform package, or the one its postinstall moved.
function binaryOf(candidates: readonly (readonly [pkg: string, file: string])[]): string {
  for (const [name, file] of candidates) {
    let folder: string;
    try {
      folder = dirname(require.resolve(`${name}/package.json`));
    } catch {
      continue;
    }
    if (existsSync(join(folder, file))) return join(folder, file);
  }
  throw new Error(
    `None of ${candidates.map(([name, file]) => `${name}/${file}`).join(', ')} is installed: run npm ci (the platform package comes as an optional dependency).`,
  );
}

const ARCH: Record<string, { bun: string; deno: string; workerd: string }> = {
  'linux-x64': { bun: 'linux-x64', deno: 'linux-x64-glibc', workerd: 'linux-64' },
  'linux-arm64': { bun: 'linux-aarch64', deno: 'linux-arm64-glibc', workerd: 'linux-arm64' },
  'darwin-x64': { bun: 'darwin-x64', deno: 'darwin-x64', workerd: 'darwin-64' },
  'darwin-arm64': { bun: 'darwin-aarch64', deno: 'darwin-arm64', workerd: 'darwin-arm64' },
  'win32-x64': { bun: 'windows-x64', deno: 'win32-x64', workerd: 'windows-64' },
};

function platform(): { bun: string; deno: string; workerd: string } {
  const found = ARCH[`${process.platform}-${process.arch}`];
  if (found === undefined)
    throw new Error(`No runtime binaries for ${process.platform}-${process.arch}`);
  return found;
}

const exe = process.platform === 'win32' ? '.exe' : '';

/** The command line of a runtime: its binary, and the arguments before and after the bundle. */
function commandOf(runtime: Runtime, bundle: string): { file: string; args: string[] } {
  switch (runtime) {
    case 'node':
      return { file: process.execPath, args: [join(bundle, 'script.mjs')] };
    case 'bun':
      return {
        file: binaryOf([
          [`@oven/bun-${platform().bun}`, `bin/bun${exe}`],
          ['bun', 'bin/bun.exe'],
        ]),
        args: ['--no-install', join(bundle, 'script.mjs')],
      };
    case 'deno':
      return {
        file: binaryOf([
          [`@deno/${platform().deno}`, `deno${exe}`],
          ['deno', `deno${exe}`],
        ]),
        // A folder with a package.json is a user's project: Deno reads it to resolve the packages
        // it declares from node_modules (and may run nothing else from there).
        args: [
          'run',
          ...(existsSync(join(bundle, 'package.json')) ? ['--allow-all'] : ['--no-config']),
          '--no-lock',
          '--no-remote',
          '--no-prompt',
          'script.mjs',
        ],
      };
    case 'workerd':
      return {
        file: binaryOf([
          [`@cloudflare/workerd-${platform().workerd}`, `bin/workerd${exe}`],
          ['workerd', `bin/workerd${exe}`],
        ]),
        args: ['test', 'config.capnp'],
      };
  }
}

/** What a runtime answered: its version and the suite's results. */
export interface RuntimeRun {
  readonly runtime: Runtime;
  readonly version: string;
  readonly results: readonly CaseResult[];
  /** The runtime's output when it gave no results. */
  readonly output: string;
}

function exec(
  file: string,
  args: readonly string[],
  cwd: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(
      file,
      args,
      {
        cwd,
        timeout: 120_000,
        maxBuffer: 16 * 1024 * 1024,
        // No update checks, telemetry or colours: the run needs no network but the registry's.
        env: {
          ...process.env,
          NO_COLOR: '1',
          DENO_NO_UPDATE_CHECK: '1',
          DENO_NO_PROMPT: '1',
          DO_NOT_TRACK: '1',
          BUN_DISABLE_TELEMETRY: '1',
        },
      },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
        done({ code, stdout, stderr });
      },
    );
  });
}

/**
 * Run the bundled suite in a runtime.
 * @param bundle - {@link PortableBuild.bundle}, or the folder {@link buildEmbedded} made
 * @param marker - what the suite prints before its results
 */
export async function runIn(
  runtime: Runtime,
  bundle: string,
  marker: string = RESULTS_MARKER,
): Promise<RuntimeRun> {
  const { file, args } = commandOf(runtime, bundle);
  const version = (await exec(file, ['--version'], bundle)).stdout.trim().split('\n')[0] ?? '';
  const { stdout, stderr } = await exec(file, args, bundle);
  const output = `${stdout}\n${stderr}`;
  const line = output.split('\n').find((text) => text.includes(marker));
  const results =
    line === undefined
      ? []
      : (JSON.parse(line.slice(line.indexOf(marker) + marker.length)) as CaseResult[]);
  return { runtime, version, results, output };
}
