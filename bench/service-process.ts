/**
 * The process side of the HTTP benchmarks: start a service of `bench/` in a process of its own,
 * ask it questions over IPC, and load it with autocannon from this process. Where `taskset` is
 * found (Linux), this process (autocannon) runs on CPU 0 and the services on CPU 1, so that the
 * scheduler never puts the two on one core for part of a round: on a 2-core machine that moved a
 * bare service's rate by up to 40% from round to round.
 */
import { type ChildProcess, fork, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import autocannon from 'autocannon';

/** The connections autocannon keeps open: the same clients for every service. */
export const CONNECTIONS = 10;

/** Whether this process was pinned to CPU 0, the services then going to CPU 1. */
export const PINNED =
  process.platform === 'linux' &&
  spawnSync('taskset', ['-a', '-p', '-c', '0', String(process.pid)], { stdio: 'ignore' }).status ===
    0;

/**
 * Start `bench/<file>` with its arguments in a process of its own, with IPC; `nodeArgs` go to
 * node before the file (`--cpu-prof`, for one).
 */
export function startService(
  file: string,
  args: readonly string[],
  nodeArgs: readonly string[] = [],
): ChildProcess {
  const path = join(import.meta.dirname, file);
  const stdio = ['ignore', 'inherit', 'inherit', 'ipc'] as const;
  const execArgv = [...nodeArgs, '--import', 'tsx'];
  if (!PINNED) return fork(path, args, { execArgv, stdio: [...stdio] });
  return spawn('taskset', ['-c', '1', process.execPath, ...execArgv, path, ...args], {
    stdio: [...stdio],
  });
}

/** Send `message` (none when empty) and wait for the first reply that has `key`. */
export function ask<T>(child: ChildProcess, message: string, key: string): Promise<T> {
  return new Promise((resolve) => {
    const listener = (reply: Record<string, unknown>) => {
      if (key in reply) {
        child.off('message', listener);
        resolve(reply as T);
      }
    };
    child.on('message', listener);
    if (message !== '') child.send(message);
  });
}

/** Stop a service and wait until it is gone. */
export async function stopService(child: ChildProcess): Promise<void> {
  child.kill();
  if (child.exitCode === null && child.signalCode === null) await once(child, 'exit');
}

/** What a load may set besides its URL and duration; each left out keeps the default. */
export interface LoadOptions {
  /** Connections kept open. @defaultValue {@link CONNECTIONS} */
  readonly connections?: number;
  /** @defaultValue `{ 'x-client': 'bench-client' }` */
  readonly headers?: Record<string, string>;
  /** Requests in turn on each connection, each with its method, path, body or `setupRequest`. */
  readonly requests?: autocannon.Request[];
}

/**
 * Load `url` for `seconds` with the benchmark's clients: GET, keep-alive, one header, unless
 * `options` say otherwise.
 */
export async function load(
  url: string,
  seconds: number,
  options: LoadOptions = {},
): Promise<autocannon.Result> {
  return autocannon({
    url,
    connections: options.connections ?? CONNECTIONS,
    duration: seconds,
    headers: options.headers ?? { 'x-client': 'bench-client' },
    ...(options.requests === undefined ? {} : { requests: options.requests }),
  });
}
