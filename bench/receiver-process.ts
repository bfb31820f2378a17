/**
 * The deliveries benchmark's side of its receiver (`bench/delivery-receiver.ts`, a process of its
 * own): start it, arm it for a run, learn when the run's last delivery arrived.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';

/** What the receiver saw of one run. */
export interface Receipt {
  /** When the last expected delivery arrived (`performance.timeOrigin + performance.now()`). */
  readonly at: number;
  /** Deliveries whose signature it verified, and those that failed. */
  readonly verified: number;
  readonly badSignatures: number;
  /** Deliveries whose webhook-id it had seen before in the run. */
  readonly duplicates: number;
}

/** The receiver in its process. */
export class ReceiverProcess {
  private constructor(
    private readonly child: ChildProcess,
    /** Where to POST: `http://127.0.0.1:<port>/in`. */
    readonly url: string,
  ) {}

  /** The receiver's process id. */
  get pid(): number {
    return this.child.pid ?? 0;
  }

  static async start(): Promise<ReceiverProcess> {
    const child = fork(join(import.meta.dirname, 'delivery-receiver.ts'), [], {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const { port } = await reply<{ port: number }>(child, 'ready');
    return new ReceiverProcess(child, `http://127.0.0.1:${port}/in`);
  }

  /**
   * Arm the receiver for `count` deliveries signed with one of `secrets`; resolves once armed,
   * with the promise of the run's receipt.
   */
  async expect(count: number, secrets: readonly string[]): Promise<{ done: Promise<Receipt> }> {
    const armed = reply(this.child, 'armed');
    const done = reply<Receipt>(this.child, 'done');
    done.catch(() => undefined); // awaited by the caller; never unhandled meanwhile
    this.child.send({ expect: count, secrets });
    await armed;
    return { done };
  }

  async stop(): Promise<void> {
    const exited = once(this.child, 'exit');
    this.child.send('stop');
    await exited;
  }
}

/** The first message from `child` that has `key`. */
function reply<T>(child: ChildProcess, key: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const exit = (code: number | null) => reject(new Error(`the receiver exited (${code})`));
    const listener = (message: Record<string, unknown>) => {
      if (!(key in message)) return;
      child.off('message', listener);
      child.off('exit', exit);
      resolve(message as T);
    };
    child.on('message', listener);
    child.once('exit', exit);
  });
}
