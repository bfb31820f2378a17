/**
 * The child processes of a test file: a TypeScript entry run by node with tsx, its output kept,
 * awaited until it prints what the test waits for (or exits first), stopped with a signal. Every
 * process started is tracked until it exits, so that `stopAll()` in an `afterAll` or `afterEach`
 * leaves none behind, whether the tests passed or not. demo-process.ts, instance-process.ts and
 * data-folder-holders.ts start theirs through it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';

/** How a child is started. */
export interface ChildOptions {
  /** Arguments after the entry. */
  readonly args?: readonly string[];
  /** The whole environment of the child. @defaultValue this process's */
  readonly env?: NodeJS.ProcessEnv;
  /** `pipe`: the test holds the child's stdin (a child that exits when it ends). @defaultValue `ignore` */
  readonly stdin?: 'pipe' | 'ignore';
  /** `inherit`: the child writes to the test's own stderr, not kept. @defaultValue `pipe` */
  readonly stderr?: 'pipe' | 'inherit';
}

/** A started child. */
export interface Child {
  readonly child: ChildProcess;
  /** Its exit code once it exits (null when a signal ended it). */
  readonly exited: Promise<number | null>;
  /** What it printed on stdout so far. */
  stdout(): string;
  /** What it printed on stderr so far ('' when stderr is inherited). */
  stderr(): string;
  /**
   * The first match of `pattern` in its stdout, once printed; `undefined` when it exits without
   * printing one (its whole output read by then).
   */
  waitFor(pattern: RegExp): Promise<RegExpExecArray | undefined>;
  /** Send `signal` (unless it has exited) and resolve with its exit code. */
  stop(signal: 'SIGTERM' | 'SIGKILL'): Promise<number | null>;
}

/** Starts children and stops them all at the end. */
export class ChildProcesses {
  readonly #children = new Set<ChildProcess>();

  /** Run `node --import tsx <entry> ...args`. */
  start(entry: string, options: ChildOptions = {}): Child {
    const child = spawn(process.execPath, ['--import', 'tsx', entry, ...(options.args ?? [])], {
      env: options.env ?? process.env,
      stdio: [options.stdin ?? 'ignore', 'pipe', options.stderr ?? 'pipe'],
    });
    this.#children.add(child);
    child.once('exit', () => this.#children.delete(child));
    let stdout = '';
    let stderr = '';
    const watchers = new Set<() => void>();
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      for (const watcher of watchers) watcher();
    });
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    // 'close' follows the exit and the end of the output streams: all output is read by then.
    const closed = once(child, 'close');
    const exited = once(child, 'exit').then(([code]) => code as number | null);
    return {
      child,
      exited,
      stdout: () => stdout,
      stderr: () => stderr,
      waitFor: (pattern) =>
        new Promise((resolve) => {
          const watcher = () => {
            const match = pattern.exec(stdout);
            if (match === null) return;
            watchers.delete(watcher);
            resolve(match);
          };
          watchers.add(watcher);
          watcher();
          void closed.then(() => {
            watcher();
            watchers.delete(watcher);
            resolve(undefined);
          });
        }),
      stop: async (signal) => {
        if (child.exitCode === null && child.signalCode === null) child.kill(signal);
        return exited;
      },
    };
  }

  /** Kill every child still running (SIGKILL) and wait for each to exit. */
  async stopAll(): Promise<void> {
    await Promise.all(
      [...this.#children].map(async (child) => {
        // Still in the set: it has not exited (it leaves the set as it does).
        const exited = once(child, 'exit');
        child.kill('SIGKILL');
        await exited;
      }),
    );
  }
}
