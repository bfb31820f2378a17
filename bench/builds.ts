/**
 * The builds of the library a benchmark measures: this checkout's (`npm run bench` builds it
 * first), and with `BENCH_BASELINE` set to another build's `dist` folder, that build too, so that
 * one run measures both side by side (see docs/benchmarks.md, "Build against build").
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/** The main entry of a build. */
export type Library = typeof import('api-conventions');
/** The node:http adapter of a build. */
export type NodeAdapter = typeof import('api-conventions/node');

/** The `dist` folder of the baseline build, or undefined when the run measures this one only. */
export const BASELINE: string | undefined =
  process.env.BENCH_BASELINE === undefined || process.env.BENCH_BASELINE === ''
    ? undefined
    : resolve(process.env.BENCH_BASELINE);

/** A build's main entry: this checkout's when `dist` is undefined or empty. */
export async function loadLibrary(dist: string | undefined): Promise<Library> {
  if (dist === undefined || dist === '') return import('api-conventions');
  return (await import(pathToFileURL(resolve(dist, 'index.js')).href)) as Library;
}

/** A build's node:http adapter: this checkout's when `dist` is undefined or empty. */
export async function loadNodeAdapter(dist: string | undefined): Promise<NodeAdapter> {
  if (dist === undefined || dist === '') return import('api-conventions/node');
  return (await import(pathToFileURL(resolve(dist, 'adapters', 'node.js')).href)) as NodeAdapter;
}
