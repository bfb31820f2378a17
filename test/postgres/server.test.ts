/**
 * The test PostgreSQL of test/support/postgres-server.ts, against real initdb, pg_ctl and psql: it
 * answers on a port of its own (never 5432), two run side by side, a restart keeps the data, and a
 * stop leaves neither folder nor listener behind.
 */
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresServer } from '../support/postgres-server.js';

/** Whether something can listen on `port` of 127.0.0.1 right now. */
async function portIsFree(port: number): Promise<boolean> {
  const server = createServer();
  return new Promise((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

describe('PostgresServer', () => {
  let first: PostgresServer;
  let second: PostgresServer;

  beforeAll(async () => {
    [first, second] = await Promise.all([PostgresServer.start(), PostgresServer.start()]);
  });

  afterAll(async () => {
    await Promise.all([first?.stop(), second?.stop()]);
  });

  it('answers a query on a port of its own, never 5432', async () => {
    expect(await first.query('select 1')).toBe('1');
    expect(first.port).not.toBe(5432);
    expect(first.url).toBe(`postgres://postgres@127.0.0.1:${first.port}/postgres`);
  });

  it('runs two servers at once, on different ports and data folders', async () => {
    expect(second.port).not.toBe(first.port);
    expect(second.dataDir).not.toBe(first.dataDir);
    expect(await second.query('show port')).toBe(String(second.port));
    expect(await first.query('show port')).toBe(String(first.port));
  });

  it('keeps a table and its row across a restart on the same port', async () => {
    await first.query('create table kept (id int primary key, name text)');
    await first.query("insert into kept values (1, 'one')");
    const port = first.port;

    await first.restart();

    expect(first.port).toBe(port);
    expect(await first.query('select id, name from kept')).toBe('1|one');
  });

  it('keeps the data folder when stopped with keepData, and starts again from it', async () => {
    await second.query('create table again (n int)');
    await second.query('insert into again values (7)');

    await second.stop({ keepData: true });

    expect(second.isRunning).toBe(false);
    expect(existsSync(second.dataDir)).toBe(true);
    expect(await portIsFree(second.port)).toBe(true);
    await second.restart();
    expect(await second.query('select n from again')).toBe('7');
  });

  it('removes its folders and frees its port when stopped', async () => {
    const server = await PostgresServer.start();
    expect(await portIsFree(server.port)).toBe(false);

    await server.stop();

    expect(existsSync(server.dataDir)).toBe(false);
    expect(existsSync(server.socketDir)).toBe(false);
    expect(await portIsFree(server.port)).toBe(true);
  });

  it('starts again on the same port after a stop', async () => {
    const server = await PostgresServer.start();
    const port = server.port;
    await server.stop();

    const again = await PostgresServer.start({ port });
    try {
      expect(again.port).toBe(port);
      expect(await again.query('select 2')).toBe('2');
    } finally {
      await again.stop();
    }
  });

  it('refuses port 5432, the machine’s own server', async () => {
    await expect(PostgresServer.start({ port: 5432 })).rejects.toThrow(/5432/);
  });
});
