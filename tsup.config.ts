import { defineConfig } from 'tsup';

// One entry per public subpath; keep in step with package.json "exports".
export default defineConfig({
  entry: {
    index: 'src/index.ts',
    'testing/index': 'src/testing/index.ts',
    'client/index': 'src/client/index.ts',
    'adapters/node': 'src/adapters/node.ts',
    'adapters/express': 'src/adapters/express.ts',
    'adapters/fastify': 'src/adapters/fastify.ts',
    'adapters/hono': 'src/adapters/hono.ts',
    'adapters/koa': 'src/adapters/koa.ts',
    'redis/index': 'src/redis/index.ts',
    'queue-redis/index': 'src/queue-redis/index.ts',
    'postgres/index': 'src/postgres/index.ts',
    'otel/index': 'src/otel/index.ts',
  },
  format: ['esm', 'cjs'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
  splitting: true,
  treeshake: true,
});
