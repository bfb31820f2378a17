/**
 * Processes that lock a data folder (data-folder-holder.ts), for tests of one process per folder:
 * each answers whether it holds the folder, and holds it until released or killed. Every process
 * started is stopped by `stopAll()`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';

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
  readonly #children = new Set<ChildProcess>();

  async start(folder: string): Promise<Holder> {
    const child = spawn(process.execPath, ['--import', 'tsx', ENTRY, folder], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    this.#children.add(child);
    const exited = once(child, 'exit').then(([code]) => {
      this.#children.delete(child);
      return code as number | null;
    });
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    const line = await Promise.race([
      once(lines, 'line').then(([text]) => text as string),
      exited.then((code) => `{"held":false,"code":"exited ${code}"}`),
    ]);
    const answer = JSON.parse(line) as HolderAnswer;
    return {
      child,
      answer,
      release: async () => {
        child.stdin?.end();
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
