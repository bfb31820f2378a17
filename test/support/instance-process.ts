/**
 * Webhook service instances as real processes (test/support/webhook-instance.ts run with tsx), and
 * calls to them over real HTTP. Every process started is tracked, so that `stopAll()` in an
 * `afterAll` leaves none behind, whether the tests passed or not.
 */
import type { ChildProcess } from 'node:child_process';
import type { PublishEvent, PublishResult, WebhookServiceStats } from '../../src/index.js';
import { type Child, ChildProcesses } from './child-processes.js';

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
  readonly #children = new ChildProcesses();

  /**
   * Start one instance with this environment (see webhook-instance.ts) and wait until it serves.
   * @param name - its name, also its connections' `application_name`
   */
  async start(name: string, env: Record<string, string>): Promise<InstanceProcess> {
    const started = this.#children.start(ENTRY, {
      env: { ...process.env, ...env, INSTANCE: name },
      // The instance exits when its stdin ends: it never outlives this process.
      stdin: 'pipe',
      stderr: 'inherit',
    });
    const listening = await started.waitFor(/^listening ([0-9]+)$/m);
    if (listening === undefined) {
      throw new Error(`instance ${name} exited with ${await started.exited}`);
    }
    return instance(name, `http://127.0.0.1:${listening[1]}`, started);
  }

  /** Kill every instance still running and wait for each to exit. */
  stopAll(): Promise<void> {
    return this.#children.stopAll();
  }
}

function instance(name: string, url: string, started: Child): InstanceProcess {
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
    child: started.child,
    call,
    publish: (event) => expectOk(call('POST', '/test/publish', { body: event }), 'publish'),
    stats: () => expectOk(call('GET', '/test/stats'), 'stats'),
    errors: () => expectOk(call('GET', '/test/errors'), 'errors'),
    stop: (signal) => started.stop(signal),
  };
}
