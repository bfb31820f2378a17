import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // One redis-server for the run, shared by the files that leave it running (shared-redis.ts).
    globalSetup: ['test/support/redis-global-setup.ts'],
    // Property tests run many cases; the fake clock keeps them instant, but give CI headroom.
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
