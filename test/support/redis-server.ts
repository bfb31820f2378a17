/**
 * A real redis-server for the Redis store's tests: started on a free port (never 6379) with no
 * persistence, stopped afterwards, restartable on the same port. Readiness is the server's own
 * "Ready to accept connections" line; stopping waits for the process to exit.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { ioredisClient, nodeRedisClient, type RedisScriptClient } from '../../src/redis/index.js';
import { freePort } from './ports.js';

/** Whether something can listen on `port` of 127.0.0.1 right now. */
async function portIsFree(port: number): Promise<boolean> {
  const server = createServer();
  return new Promise((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A free port for a Redis Cluster node: the node also listens on its cluster bus, the port plus
 * 10000, which must be free as well (and so below 55536). Never 6379 nor 16379.
 */
export async function freeClusterPort(): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = await freePort();
    if (port + 10_000 > 65_535 || port + 10_000 === 16_379) continue;
    if (await portIsFree(port + 10_000)) return port;
  }
  throw new Error('no free port with a free cluster bus port (port + 10000)');
}

/** Where and how to start a server. */
export interface RedisServerOptions {
  /** The port. @defaultValue a free port */
  port?: number;
  /** More redis-server arguments, e.g. `--cluster-enabled yes`. */
  args?: readonly string[];
}

/** A redis-server child process. */
export class RedisServer {
  #process: ChildProcess | undefined;

  private constructor(
    readonly port: number,
    readonly args: readonly string[],
  ) {}

  /** Start a server on a free port (or the one given), with any further arguments. */
  static async start(options: RedisServerOptions = {}): Promise<RedisServer> {
    const server = new RedisServer(options.port ?? (await freePort()), options.args ?? []);
    await server.restart();
    return server;
  }

  /** Start (again) on the same port, with an empty data set and script cache. */
  async restart(): Promise<void> {
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(this.port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        ...this.args,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    this.#process = child;
    await new Promise<void>((resolve, reject) => {
      let output = '';
      child.stdout!.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('Ready to accept connections')) resolve();
      });
      child.once('exit', (code) => reject(new Error(`redis-server exited (${code}): ${output}`)));
      // No redis-server on the PATH: spawn reports it here, not with an exit.
      child.once('error', reject);
    });
    child.stdout!.resume();
  }

  /** Freeze the server (SIGSTOP): connections stay open and nothing is answered. */
  pause(): void {
    this.#process?.kill('SIGSTOP');
  }

  /** Let a frozen server run again (SIGCONT). */
  resume(): void {
    this.#process?.kill('SIGCONT');
  }

  /** Stop the server and wait for the process to exit. */
  async stop(): Promise<void> {
    const child = this.#process;
    this.#process = undefined;
    if (child === undefined || child.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGKILL');
    await exited;
  }
}

/**
 * An admin connection (ioredis) to a test server, for INFO, SCRIPT FLUSH, CLIENT PAUSE, keys; on
 * database `db` (a file's own on the shared server, see shared-redis.ts).
 */
export async function adminClient(port: number, db = 0): Promise<Redis> {
  const redis = new Redis({ port, host: '127.0.0.1', db, lazyConnect: true });
  redis.on('error', () => undefined);
  await redis.connect();
  return redis;
}

/** The two client libraries, each behind its adapter. */
export type ClientKind = 'ioredis' | 'node-redis';
export const clientKinds: readonly ClientKind[] = ['ioredis', 'node-redis'];

/** A connected client of either kind, with no offline queue and quick reconnects. */
export interface TestClient {
  readonly client: RedisScriptClient;
  /** Resolves once the client is (again) ready to send commands. */
  ready(): Promise<void>;
  close(): Promise<void>;
}

/** Connect to `port`, on database `db` (a file's own on the shared server, see shared-redis.ts). */
export async function connect(kind: ClientKind, port: number, db = 0): Promise<TestClient> {
  if (kind === 'ioredis') {
    const redis = new Redis({
      port,
      host: '127.0.0.1',
      db,
      enableOfflineQueue: false,
      autoResendUnfulfilledCommands: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => 20,
      lazyConnect: true,
    });
    redis.on('error', () => undefined);
    await redis.connect();
    return {
      client: ioredisClient(redis),
      ready: () =>
        redis.status === 'ready'
          ? Promise.resolve()
          : new Promise((resolve) => redis.once('ready', () => resolve())),
      close: async () => {
        redis.disconnect();
      },
    };
  }
  const redis = createClient({
    socket: { host: '127.0.0.1', port, reconnectStrategy: () => 20 },
    database: db,
    disableOfflineQueue: true,
  });
  redis.on('error', () => undefined);
  await redis.connect();
  return {
    client: nodeRedisClient(redis),
    ready: () =>
      redis.isReady
        ? Promise.resolve()
        : new Promise((resolve) => redis.once('ready', () => resolve())),
    close: async () => {
      if (redis.isOpen) redis.destroy();
    },
  };
}

/** A timer that fires only when told to: timeouts without waiting. */
export class ManualTimer {
  readonly pending = new Map<number, () => void>();
  #next = 1;

  setTimeout = (callback: () => void, _ms: number): unknown => {
    const id = this.#next++;
    this.pending.set(id, callback);
    return id;
  };

  clearTimeout = (handle: unknown): void => {
    this.pending.delete(handle as number);
  };

  /** Fire every pending timeout. */
  fireAll(): void {
    const callbacks = [...this.pending.values()];
    this.pending.clear();
    for (const callback of callbacks) callback();
  }
}
