import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Property tests run many cases; the fake clock keeps them instant, but give CI headroom.
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
