/**
 * The webhook service over real HTTP in its five mountings (node:http, Express, Fastify and Koa
 * through the bridge, Hono as it is), on the memory repository, on PGlite and on a real PostgreSQL:
 * every endpoint, and bad input answered with problem details.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestDatabases } from '../../postgres/databases.js';
import { type Exchanged, type Sending, exchange as send } from '../../support/fetch-echo.js';
import { type MountedServer, mountedServers } from '../../support/fetch-mount-suite.js';
import { checkAnswer } from '../../support/openapi-check.js';
import { serviceSetup, subscriptionBody } from '../../support/webhook-service.js';

const databases = new TestDatabases();
beforeAll(() => databases.start());
afterAll(() => databases.stop());

const repositories = databases.repositories();

describe.each(Object.keys(repositories))('the webhook service on %s', (name) => {
  let servers: MountedServer[] = [];
  const failures: unknown[] = [];
  let setup: ReturnType<typeof serviceSetup>;
  // Every answer checked against the OpenAPI document the service serves.
  const exchange = async (
    base: string,
    path: string,
    sending: Sending = {},
  ): Promise<Exchanged> => {
    const answer = await send(base, path, sending);
    const contentType = answer.headers['content-type'];
    await checkAnswer(setup.service, sending.method ?? 'GET', path, {
      status: answer.status,
      contentType: contentType ?? null,
      text: answer.body,
    });
    return answer;
  };
  beforeAll(async () => {
    setup = serviceSetup({ repository: await repositories[name]!() });
    servers = await mountedServers(setup.service, { onError: (e) => failures.push(e) });
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()));
    await setup.service.close();
    await setup.repository.close?.();
  });

  it('serves every endpoint in each mounting, with problem details for bad input', async () => {
    for (const server of servers) {
      const account = `A-${server.framework}`;
      const json = { 'content-type': 'application/json', 'x-account': account };
      const other = { 'content-type': 'application/json', 'x-account': `${account}-other` };
      const label = (what: string, body = '') => `${server.framework} ${what} ${body}`;
      const post = (body: string, headers = json) =>
        exchange(server.url, '/v1/subscriptions', { method: 'POST', headers, body });

      const created = await post(JSON.stringify(subscriptionBody()));
      expect(created.status, label('create', created.body)).toBe(201);
      const { id, secret } = JSON.parse(created.body) as { id: string; secret: string };
      expect(secret).toMatch(/^whsec_/);
      expect(created.headers.location).toBe(`/v1/subscriptions/${id}`);

      const read = await exchange(server.url, `/v1/subscriptions/${id}`, { headers: json });
      expect(read.status, label('read')).toBe(200);
      expect(JSON.parse(read.body)).toMatchObject({ id, status: 'enabled' });
      expect(read.body).not.toContain(secret);
      const foreign = await exchange(server.url, `/v1/subscriptions/${id}`, { headers: other });
      expect(foreign.status, label('read by another account')).toBe(404);

      const list = await exchange(server.url, '/v1/subscriptions?pageNumber=1&pageSize=10', {
        headers: json,
      });
      expect(list.status, label('list')).toBe(200);
      expect(JSON.parse(list.body)).toMatchObject({ totalItems: 1, items: [{ id }] });
      const tooBig = await exchange(server.url, '/v1/subscriptions?pageSize=201', {
        headers: json,
      });
      expect(tooBig.status, label('pageSize 201')).toBe(400);
      expect(tooBig.headers['content-type']).toContain('application/problem+json');

      const patched = await exchange(server.url, `/v1/subscriptions/${id}`, {
        method: 'PATCH',
        headers: json,
        body: '{"status":"disabled","propertyIds":["BER"]}',
      });
      expect(patched.status, label('patch', patched.body)).toBe(200);
      expect(JSON.parse(patched.body)).toMatchObject({ status: 'disabled', propertyIds: ['BER'] });

      const rotated = await exchange(server.url, `/v1/subscriptions/${id}/secret/rotate`, {
        method: 'POST',
        headers: { 'x-account': account },
      });
      expect(rotated.status, label('rotate', rotated.body)).toBe(200);
      expect(JSON.parse(rotated.body).secret).not.toBe(secret);

      const invalid = await post('{"endpointUrl":"ftp://x","events":[]}');
      expect(invalid.status, label('invalid body')).toBe(400);
      const pointers = JSON.parse(invalid.body).errors.map((e: { path: string }) => e.path);
      expect(pointers).toEqual(expect.arrayContaining(['/endpointUrl', '/events']));
      expect((await post('{"endpointUrl": 1')).status, label('broken JSON')).toBe(400);
      const text = { 'content-type': 'text/plain', 'x-account': account };
      expect((await post('{}', text)).status, label('text/plain')).toBe(415);
      expect((await post('x'.repeat(2 * 1024 * 1024))).status, label('2 MiB')).toBe(413);

      const deleted = await exchange(server.url, `/v1/subscriptions/${id}`, {
        method: 'DELETE',
        headers: json,
      });
      expect(deleted.status, label('delete')).toBe(204);
      const gone = await exchange(server.url, `/v1/subscriptions/${id}`, { headers: json });
      expect(gone.status, label('read after delete')).toBe(404);
    }
    expect(failures).toEqual([]);
    expect(setup.errors).toEqual([]);
  });
});
