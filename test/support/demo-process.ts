/**
 * The reference service (examples/service.ts) as `npm run demo` starts it: a real process on a free
 * port, its output kept, stopped with SIGTERM or killed with SIGKILL. A process that exits before
 * it serves is answered with its exit code and output instead. `stopAll()` leaves none behind.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';

/** A demo process that serves. */
export interface DemoProcess {
  readonly url: string;
  readonly child: ChildProcess;
  readonly stdout: () => string;
  readonly stderr: () => string;
  /** SIGTERM, and the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL: the process ends at once, its memory queue and its lock file left as they are. */
  kill(): Promise<void>;
}

/** A demo process that exited before it served. */
export interface DemoExit {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Starts demo processes and stops them all at the end. */
export class DemoProcesses {
  readonly #children = new Set<ChildProcess>();

  /** Start one with this environment; resolves once it serves, or with how it exited. */
  async start(env: NodeJS.ProcessEnv): Promise<DemoProcess | DemoExit> {
    const child = spawn(process.execPath, ['--import', 'tsx', 'examples/service.ts'], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.#children.add(child);
    let stdout = '';
    let stderr = '';
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    // 'close' follows the end of the output streams as well as the exit.
    const closed = once(child, 'close');
    const exited = once(child, 'exit').then(([code]) => {
      this.#children.delete(child);
      return code as number | null;
    });
    const serving = new Promise<boolean>((resolve) => {
      child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
        stdout += chunk;
        if (stdout.includes('Press Ctrl+C to stop.')) resolve(true);
      });
      exited.then(() => resolve(false));
    });
    if (!(await serving)) {
      const code = await exited;
      await closed;
      return { code, stdout, stderr };
    }
    return {
      url: /on (http:\/\/127\.0\.0\.1:[0-9]+)/.exec(stdout)?.[1] as string,
      child,
      stdout: () => stdout,
      stderr: () => stderr,
      stop: async () => {
        child.kill('SIGTERM');
        return exited;
      },
      kill: async () => {
        child.kill('SIGKILL');
        await exited;
      },
    };
  }

  async stopAll(): Promise<void> {
    await Promise.all(
      [...this.#children].map(async (child) => {
        const exited = once(child, 'exit');
        child.kill('SIGKILL');
        await exited;
      }),
    );
  }
}

/** Whether a start ended in a serving process. */
export function serving(started: DemoProcess | DemoExit): started is DemoProcess {
  return 'url' in started;
}
