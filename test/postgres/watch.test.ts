/**
 * watch: LISTEN/NOTIFY on a pg Pool and on PGlite. The listener is told each change's revision,
 * onReconnect once the channel is open; on a real server, after the listening backend is killed,
 * the connection comes back, onReconnect is called again and a change made afterwards arrives.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresSubscriptionRepository } from '../../src/postgres/index.js';
import type { ChangeListener } from '../../src/webhooks/store/repository.js';
import { eventually } from '../support/eventually.js';
import { DATABASES, subscription, TestDatabases } from './databases.js';

const dbs = new TestDatabases();
beforeAll(() => dbs.start());
afterAll(() => dbs.stop());

const LIMITS = { at: 0, maxPerAccount: 10 };

/** Wait for a condition (see `eventually`; no timing is asserted). */
const until = (condition: () => boolean | Promise<boolean>, what: string): Promise<boolean> =>
  eventually(what, condition, 10);

/** A listener that keeps what it is told. */
function recorder(): ChangeListener & { revisions: number[]; reconnects: number } {
  const heard = {
    revisions: [] as number[],
    reconnects: 0,
    onChange: (revision: number) => heard.revisions.push(revision),
    onReconnect: () => {
      heard.reconnects++;
    },
  };
  return heard;
}

describe.each(DATABASES)('watch on %s', (name) => {
  it('calls onReconnect once open, then hears every change of another repository on the schema', async () => {
    const schema = dbs.schema();
    const database = dbs.database(name);
    const writer = await PostgresSubscriptionRepository.open({ database, schema });
    const watcher = await PostgresSubscriptionRepository.open({ database, schema });
    const heard = recorder();
    const stop = await watcher.watch(heard);
    expect(heard.reconnects).toBe(1);
    await writer.create(subscription('ACME', 'a'), 's', LIMITS);
    await writer.update('ACME', 'a', { status: 'disabled' }, 1);
    await writer.delete('ACME', 'a', 2);
    await until(() => heard.revisions.length >= 3, 'three notifications');
    expect(heard.revisions).toEqual([1, 2, 3]);
    await stop();
    await writer.create(subscription('ACME', 'b'), 's', LIMITS);
    await writer.create(subscription('ACME', 'c'), 's', LIMITS);
    // Once stopped, nothing more arrives: a second listener still open shows the later change.
    const second = recorder();
    const stopSecond = await watcher.watch(second);
    await writer.create(subscription('ACME', 'd'), 's', LIMITS);
    await until(() => second.revisions.length >= 1, 'the later change');
    expect(heard.revisions).toEqual([1, 2, 3]);
    await stopSecond();
    await watcher.close();
  });

  it('goes on when a listener throws, and close() stops every watch', async () => {
    const repo = await dbs.open(name);
    const heard = recorder();
    await repo.watch({
      onChange: () => {
        throw new Error('listener failed');
      },
      onReconnect: () => {
        throw new Error('listener failed');
      },
    });
    await repo.watch(heard);
    await repo.create(subscription('ACME', 'a'), 's', LIMITS);
    await until(() => heard.revisions.length === 1, 'the change');
    await repo.close();
    if (name === 'pg') {
      // The connections are closed, not given back to the pool still listening.
      const listening = `SELECT pid FROM pg_stat_activity
        WHERE datname = current_database() AND query = 'LISTEN ${repo.channel}'`;
      const pool = dbs.database('pg');
      await until(async () => (await pool.query(listening)).rows.length === 0, 'no LISTEN left');
    }
  });
});

describe('watch on a pg Pool when the listening connection is killed', () => {
  it('opens it again, calls onReconnect, and a change made afterwards reaches the listener', async () => {
    const repo = await dbs.open('pg', { reconnectDelayMs: 20, maxReconnectDelayMs: 200 });
    const heard = recorder();
    const stop = await repo.watch(heard);
    expect(heard.reconnects).toBe(1);
    await repo.create(subscription('ACME', 'before'), 's', LIMITS);
    await until(() => heard.revisions.includes(1), 'the first change');

    const pool = dbs.database('pg');
    const listening = `SELECT pid FROM pg_stat_activity
      WHERE datname = current_database() AND query = 'LISTEN ${repo.channel}'`;
    const { rows } = await pool.query(listening);
    expect(rows).toHaveLength(1);
    const { pid } = rows[0] as { pid: number };
    await pool.query('SELECT pg_terminate_backend($1)', [pid]);

    // A change while no connection listens is not heard; onReconnect tells to read changesSince.
    await repo.create(subscription('ACME', 'while-down'), 's', LIMITS);
    await until(() => heard.reconnects === 2, 'the second onReconnect');
    const missed = await repo.changesSince(1, 100);
    expect(missed.map((c) => c.id)).toEqual(['while-down']);

    await repo.create(subscription('ACME', 'after'), 's', LIMITS);
    await until(() => heard.revisions.includes(3), 'the change after the reconnect');
    const again = await pool.query(listening);
    expect((again.rows[0] as { pid: number }).pid).not.toBe(pid);
    await stop();
    await until(
      async () => (await pool.query(listening)).rows.length === 0,
      'the LISTEN connection closed',
    );
  });
});
