/**
 * The reference service (examples/service.ts) as `npm run demo` starts it: a real process on a free
 * port, its output kept, stopped with SIGTERM or killed with SIGKILL. A process that exits before
 * it serves is answered with its exit code and output instead. `stopAll()` leaves none behind.
 */
import type { ChildProcess } from 'node:child_process';
import { ChildProcesses } from './child-processes.js';

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
  readonly #children = new ChildProcesses();

  /** Start one with this environment; resolves once it serves, or with how it exited. */
  async start(env: NodeJS.ProcessEnv): Promise<DemoProcess | DemoExit> {
    const started = this.#children.start('examples/service.ts', { env });
    const served = await started.waitFor(/Press Ctrl\+C to stop\./);
    if (served === undefined) {
      return { code: await started.exited, stdout: started.stdout(), stderr: started.stderr() };
    }
    return {
      url: /on (http:\/\/127\.0\.0\.1:[0-9]+)/.exec(started.stdout())?.[1] as string,
      child: started.child,
      stdout: started.stdout,
      stderr: started.stderr,
      stop: () => started.stop('SIGTERM'),
      kill: async () => {
        await started.stop('SIGKILL');
      },
    };
  }

  stopAll(): Promise<void> {
    return this.#children.stopAll();
  }
}

/** Whether a start ended in a serving process. */
export function serving(started: DemoProcess | DemoExit): started is DemoProcess {
  return 'url' in started;
}
