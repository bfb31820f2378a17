/**
 * vitest globalSetup: one redis-server for the whole run, shared by the test files that neither
 * stop, pause nor flush the server they use (see shared-redis.ts). Files that do start their own.
 */
import type { TestProject } from 'vitest/node';
import { RedisServer } from './redis-server.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /**
     * The shared server's port and how many databases it has, or the reason there is none (no
     * redis-server on the PATH).
     */
    sharedRedis: { port: number; databases: number } | { error: string };
  }
}

/** Each file that uses the server takes a database of its own. */
const DATABASES = 256;

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  let server: RedisServer | undefined;
  try {
    server = await RedisServer.start({ args: ['--databases', String(DATABASES)] });
    project.provide('sharedRedis', { port: server.port, databases: DATABASES });
  } catch (error) {
    // Only the files that need Redis fail, and they say why.
    project.provide('sharedRedis', { error: String(error) });
  }
  return async () => {
    await server?.stop();
  };
}
