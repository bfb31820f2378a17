import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import { SlowFirstSequencer } from './test/support/slow-first-sequencer.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // One redis-server for the run, shared by the files that leave it running (shared-redis.ts).
    globalSetup: ['test/support/redis-global-setup.ts'],
    // vitest's default is one worker fewer than the cores: one on a 2-core machine, idle while a
    // file waits on Redis, a child process or a socket. At least two keep both cores busy.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // Files in one worker share the modules they import instead of loading them again: a third
    // less CPU for the suite. Tests keep no state in modules; each file sets up its own.
    isolate: false,
    sequence: { sequencer: SlowFirstSequencer },
    // Property tests run many cases; the fake clock keeps them instant, but give CI headroom.
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
