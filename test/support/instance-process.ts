/**
 * Webhook service instances as real processes (test/support/webhook-instance.ts run with tsx), and
 * calls to them over real HTTP. Every process started is tracked, so that `stopAll()` in an
 * `afterAll` leaves none behind, whether the tests passed or not.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import type { PublishEvent, PublishResult, WebhookServiceStats } from '../../src/index.js';

/** An answer of an instance, its body parsed when it is JSON. */
export interface InstanceAnswer {
  readonly status: number;
  readonly headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: a parsed JSON body, read by the tests
  readonly body: any;
}

/** A running instance. */
export interface InstanceProcess {
  readonly name: string;
  /** `http://127.0.0.1:port`. */
  readonly url: string;
  readonly child: ChildProcess;
  /** One API request, identified as `account` (`x-account`). */
  call(
    method: string,
    path: string,
    init?: { account?: string; body?: unknown },
  ): Promise<InstanceAnswer>;
  /** `service.publish(event)` in the instance. */
  publish(event: PublishEvent): Promise<PublishResult>;
  /** `service.stats()` in the instance. */
  stats(): Promise<WebhookServiceStats>;
  /** What the instance's `onError` was told so far. */
  errors(): Promise<string[]>;
  /** Send `signal` and wait for the process to exit; resolves to its exit code (null if killed). */
  stop(signal: 'SIGTERM' | 'SIGKILL'): Promise<number | null>;
}

const ENTRY = 'test/support/webhook-instance.ts';

/** Starts instances and stops them all at the end. */
export class InstanceProcesses {
  readonly #children = new Set<ChildProcess>();

  /**
   * Start one instance with this environment (see webhook-instance.ts) and wait until it serves.
   * @param name - its name, also its connections' `application_name`
   */
  async start(name: string, env: Record<string, string>): Promise<InstanceProcess> {
    const child = spawn(process.execPath, ['--import', 'tsx', ENTRY], {
      env: { ...process.env, ...env, INSTANCE: name },
      // The instance exits when its stdin ends: it never outlives this process.
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    this.#children.add(child);
    const exited = once(child, 'exit').then(([code]) => {
      this.#children.delete(child);
      return code as number | null;
    });
    const port = await new Promise<number>((resolve, reject) => {
      let output = '';
      child.stdout?.setEncoding('utf8');
      child.stdout?.on('data', (chunk: string) => {
        output += chunk;
        const match = /^listening ([0-9]+)$/m.exec(output);
        if (match !== null) resolve(Number(match[1]));
      });
      void exited.then((code) => reject(new Error(`instance ${name} exited with ${code}`)));
    });
    return instance(name, `http://127.0.0.1:${port}`, child, exited);
  }

  /** Kill every instance still running and wait for each to exit. */
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

function instance(
  name: string,
  url: string,
  child: ChildProcess,
  exited: Promise<number | null>,
): InstanceProcess {
  const call = async (
    method: string,
    path: string,
    init: { account?: string; body?: unknown } = {},
  ): Promise<InstanceAnswer> => {
    const headers: Record<string, string> = {};
    if (init.account !== undefined) headers['x-account'] = init.account;
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(`${url}${path}`, {
      method,
      headers,
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    });
    const text = await response.text();
    let body: unknown;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      body = text;
    }
    return { status: response.status, headers: response.headers, body };
  };
  const expectOk = async (answer: Promise<InstanceAnswer>, what: string) => {
    const { status, body } = await answer;
    if (status !== 200) throw new Error(`${what} on ${name}: ${status} ${JSON.stringify(body)}`);
    return body;
  };
  return {
    name,
    url,
    child,
    call,
    publish: (event) => expectOk(call('POST', '/test/publish', { body: event }), 'publish'),
    stats: () => expectOk(call('GET', '/test/stats'), 'stats'),
    errors: () => expectOk(call('GET', '/test/errors'), 'errors'),
    async stop(signal) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}
