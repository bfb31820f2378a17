/**
 * The LISTEN connection's backoff, on fake timers: after it is lost, it is opened again after
 * 100 ms, doubling up to 500 ms by default, so that whenever the server is back the connection is
 * open again within half a second (a change then reaches every instance within a second).
 */
import { EventEmitter } from 'node:events';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/index.js';
import { LISTEN_BACKOFF, listenForChanges } from '../../src/postgres/change-listener.js';
import type { DatabaseKind, SqlClient } from '../../src/postgres/sql-database.js';
import { FakeTimers } from '../support/fake-timers.js';

/** A pg client as the listener uses it: LISTEN answers, and it can be made to fail. */
class FakeClient extends EventEmitter {
  readonly queries: string[] = [];
  released = false;
  async query(text: string) {
    this.queries.push(text);
    return { rows: [] };
  }
  release() {
    this.released = true;
  }
}

/** No pool: the listener opens its connections with `connect`. */
const NO_POOL = { kind: 'pool', db: {} } as unknown as DatabaseKind;

/**
 * Listen, lose the connection at time 0, with the server down until `outageMs`: resolves to the
 * time the connection is open again and the waits between attempts.
 */
async function reopenAfter(
  outageMs: number,
  backoff: { reconnectDelayMs: number; maxReconnectDelayMs: number } = LISTEN_BACKOFF,
) {
  const clock = new FakeClock(0);
  const timers = new FakeTimers(clock);
  const waits: number[] = [];
  const clients: FakeClient[] = [];
  let reconnects = 0;
  let reopened: () => void = () => undefined;
  const open = new Promise<void>((resolve) => {
    reopened = resolve;
  });
  const stop = await listenForChanges(
    NO_POOL,
    {
      channel: 'api_conventions_changes',
      ...backoff,
      connect: async () => {
        if (clients.length > 0 && clock.now() < outageMs) throw new Error('ECONNREFUSED');
        const client = new FakeClient();
        clients.push(client);
        return client as unknown as SqlClient;
      },
      sleep: (ms, signal) => {
        waits.push(ms);
        return timers.sleep(ms, signal);
      },
    },
    {
      onChange: () => undefined,
      onReconnect: () => {
        if (++reconnects === 2) reopened();
      },
    },
  );
  const first = clients[0] as FakeClient;
  first.emit('error', new Error('terminating connection due to administrator command'));
  expect(first.released).toBe(true);
  await timers.run(open);
  const at = clock.now();
  const last = clients.at(-1) as FakeClient;
  expect(last.queries).toEqual(['LISTEN api_conventions_changes']);
  await stop();
  return { at, waits };
}

describe('the LISTEN connection, lost', () => {
  it('is opened again after 100 ms when the server is there', async () => {
    expect(await reopenAfter(0)).toEqual({ at: 100, waits: [100] });
  });

  it('waits 100 ms, then twice as long each time, never more than 500 ms', async () => {
    const { waits } = await reopenAfter(3_000);
    expect(waits.slice(0, 6)).toEqual([100, 200, 400, 500, 500, 500]);
  });

  it('with the defaults, is open again within 500 ms of the server coming back, whatever the outage', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 120_000 }), async (outageMs) => {
        const { at, waits } = await reopenAfter(outageMs);
        expect(at).toBeGreaterThanOrEqual(outageMs);
        expect(at - outageMs).toBeLessThanOrEqual(500);
        expect(Math.max(...waits)).toBeLessThanOrEqual(LISTEN_BACKOFF.maxReconnectDelayMs);
      }),
      { numRuns: 200 },
    );
  });

  it('keeps to the backoff it is given', async () => {
    const { at, waits } = await reopenAfter(10_000, {
      reconnectDelayMs: 20,
      maxReconnectDelayMs: 5_000,
    });
    // Tried at 20, 60, 140, ..., 5100 ms (refused), then at 10100 ms (open).
    expect(waits).toEqual([20, 40, 80, 160, 320, 640, 1280, 2560, 5000]);
    expect(at).toBe(10_100);
  });
});
