import { availableParallelism } from 'node:os';
import { configDefaults, defineConfig } from 'vitest/config';
import { SlowFirstSequencer } from './test/support/slow-first-sequencer.js';

// Files whose tests hold their own redis-server to the store's 100 ms deadline while they stop or
// pause it: they run first, by themselves, so that no busy neighbour makes a reply late.
const deadlines = ['test/redis/redis-store.test.ts', 'test/redis/middleware.test.ts'];

export default defineConfig({
  test: {
    // vitest's default is one worker fewer than the cores: one on a 2-core machine, idle while a
    // file waits on Redis, a child process or a socket. The slowest files spend much of their
    // time so (processes started, killed and restarted, servers, real HTTP): one worker more than
    // the cores keeps them busy meanwhile (on 2 cores, the 31 slowest files take 169 s with three
    // workers against 233 s with two, for the same CPU time).
    maxWorkers: availableParallelism() + 1,
    sequence: { sequencer: SlowFirstSequencer },
    // Property tests run many cases; the fake clock keeps them instant, but give CI headroom.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        test: { name: 'redis deadlines', include: deadlines, sequence: { groupOrder: 0 } },
      },
      {
        extends: true,
        test: {
          name: 'suite',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...deadlines],
          // One redis-server and one PostgreSQL server for these files, shared by those that
          // leave them running: each file takes a database of its own; and the run's folder of
          // the PGlite template, which files copy or load instead of a fresh initdb.
          globalSetup: [
            'test/support/redis-global-setup.ts',
            'test/support/postgres-global-setup.ts',
            'test/support/pglite-global-setup.ts',
          ],
          // Files in one worker share the modules they import instead of loading them again: a
          // third less CPU. Tests keep no state in modules; each file sets up its own.
          isolate: false,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
