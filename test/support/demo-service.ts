/**
 * Driving the reference service (examples/service.ts) over real HTTP in tests: started on a
 * temporary folder, called with fetch or with raw bytes, its delivery attempts awaited.
 */
import { rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { expect } from 'vitest';
import { type DemoOptions, type DemoService, startDemoService } from '../../examples/service.js';
import type { DeliveryAttempt, WebhookServiceDisabled } from '../../src/index.js';
import { demoDataDir } from './pglite-template.js';

/** The headers of the Live demo client's JSON requests. */
export const LIVE = { 'x-api-key': 'live-demo-key', 'content-type': 'application/json' };
/** The headers of the Development demo client's JSON requests. */
export const DEV = { 'x-api-key': 'dev-demo-key', 'content-type': 'application/json' };

/**
 * Starts demos on free ports, each with its embedded PostgreSQL in a temporary folder of its own
 * (copied from the run's PGlite template), and removes the folders afterwards (`afterAll(cleanup)`).
 */
export function demoStarter() {
  const folders: string[] = [];
  return {
    async start(options: DemoOptions = {}): Promise<DemoService> {
      const dataDir = await demoDataDir();
      folders.push(dataDir);
      // The tests' receivers listen on ports of their own: allowed as WEBHOOK_ALLOW=127.0.0.1 does.
      return startDemoService({
        port: 0,
        dataDir,
        allow: ['127.0.0.1'],
        onWarning: () => undefined,
        ...options,
      });
    },
    cleanup: () => Promise.all(folders.map((f) => rm(f, { recursive: true, force: true }))),
  };
}

/** What the service tells a callback, kept in order, and a way to wait for a number of them. */
export function eventLog<T>() {
  const entries: T[] = [];
  let waiters: Array<{ count: number; wake: () => void }> = [];
  return {
    entries,
    push: (entry: T) => {
      entries.push(entry);
      const ready = waiters.filter((w) => entries.length >= w.count);
      waiters = waiters.filter((w) => entries.length < w.count);
      for (const w of ready) w.wake();
    },
    waitFor: (count: number) =>
      entries.length >= count
        ? Promise.resolve()
        : new Promise<void>((wake) => waiters.push({ count, wake })),
  };
}

/** Delivery attempts as the service logs them, and a way to wait for a number of them. */
export function deliveryLog() {
  const { entries, push, waitFor } = eventLog<DeliveryAttempt>();
  return { entries, onDelivery: push, waitFor };
}

/** The subscriptions the service disabled, and a way to wait for a number of them. */
export function disabledLog() {
  const { entries, push, waitFor } = eventLog<WebhookServiceDisabled>();
  return { entries, onDisabled: push, waitFor };
}

export async function call(
  service: DemoService,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
  method = body === undefined ? 'GET' : 'POST',
) {
  const response = await fetch(`${service.url}${path}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  const type = response.headers.get('content-type') ?? '';
  return {
    status: response.status,
    headers: response.headers,
    // biome-ignore lint/suspicious/noExplicitAny: JSON bodies of many shapes, read by the assertions
    body: (type.includes('json') ? JSON.parse(text) : text) as Record<string, any>,
  };
}

/**
 * Send raw bytes on one connection and read everything until the service closes it: for request
 * targets, headers and bodies that fetch would refuse to send.
 */
export function raw(
  service: DemoService,
  head: string,
  body: readonly string[] = [],
): Promise<{ status: number; headers: string; body: string }> {
  const { port } = new URL(service.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1');
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      text += chunk;
    });
    // The service may close while the body is still being written: that is the point of some tests.
    socket.on('error', () => undefined);
    socket.on('close', () => {
      const end = text.indexOf('\r\n\r\n');
      if (end === -1) return reject(new Error(`no response: ${JSON.stringify(text)}`));
      const status = Number(text.slice(9, 12));
      resolve({ status, headers: text.slice(0, end).toLowerCase(), body: text.slice(end + 4) });
    });
    socket.write(head);
    for (const chunk of body) socket.write(chunk);
  });
}

/** The JSON of a problem+json response, checked to be one. */
export function problemOf(response: { headers: string; body: string }) {
  expect(response.headers).toContain('content-type: application/problem+json');
  // A chunked body is framed: take the JSON object inside.
  const json = response.body.slice(response.body.indexOf('{'), response.body.lastIndexOf('}') + 1);
  return JSON.parse(json) as { code: string; detail: string; errors?: Array<{ code: string }> };
}
