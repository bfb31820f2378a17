/**
 * Processes that lock a data folder (data-folder-holder.ts), for tests of one process per folder:
 * each answers whether it holds the folder, and holds it until released or killed. Every process
 * started is stopped by `stopAll()`.
 */
import type { ChildProcess } from 'node:child_process';
import { ChildProcesses } from './child-processes.js';

/** What a holder answered once it tried the lock. */
export interface HolderAnswer {
  readonly held: boolean;
  /** Its own pid when it holds the folder; the holder's when it was refused. */
  readonly pid: number | undefined;
  readonly code?: string;
  readonly message?: string;
}

/** A started holder. */
export interface Holder {
  readonly child: ChildProcess;
  readonly answer: HolderAnswer;
  /** End its stdin: it releases the lock and exits 0. */
  release(): Promise<number | null>;
  /** SIGKILL: it ends at once, its lock file left behind. */
  kill(): Promise<void>;
}

const ENTRY = 'test/support/data-folder-holder.ts';

/** Starts holders and stops them all at the end. */
export class DataFolderHolders {
  readonly #children = new ChildProcesses();

  async start(folder: string): Promise<Holder> {
    const started = this.#children.start(ENTRY, {
      args: [folder],
      stdin: 'pipe',
      stderr: 'inherit',
    });
    const line = await started.waitFor(/^.*\n/);
    const answer = JSON.parse(
      line?.[0] ?? `{"held":false,"code":"exited ${await started.exited}"}`,
    ) as HolderAnswer;
    return {
      child: started.child,
      answer,
      release: async () => {
        started.child.stdin?.end();
        return started.exited;
      },
      kill: async () => {
        await started.stop('SIGKILL');
      },
    };
  }

  stopAll(): Promise<void> {
    return this.#children.stopAll();
  }
}
