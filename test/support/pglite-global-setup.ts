/**
 * vitest globalSetup: a folder of the run's own for the PGlite template (pglite-template.ts), which
 * the first test file that opens PGlite makes there and every other one copies or loads; removed
 * at the end of the run.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The run's folder of the PGlite template. */
    pgliteTemplate: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const folder = await mkdtemp(join(tmpdir(), 'pglite-template-'));
  project.provide('pgliteTemplate', folder);
  return () => rm(folder, { recursive: true, force: true });
}
