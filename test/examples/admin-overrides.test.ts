/**
 * The reference service's overrides over real HTTP: `PUT`, `GET` and `DELETE
 * /admin/overrides/{clientId}` behind the admin key, a raised client admitted where its default
 * limits refuse, an account's override over its client's, expiry on the service's clock, and every
 * bad body, path and query answered with problem details, never a 500.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { DemoService } from '../../examples/service.js';
import { FakeClock, MemoryOverrides, presets } from '../../src/index.js';
import { call, DEV, demoStarter } from '../support/demo-service.js';

const { start: startDemo, cleanup } = demoStarter();
afterAll(cleanup);

const ADMIN = { 'x-admin-key': 'admin-demo-key' };
const CLIENT = '/admin/overrides/demo-dev-app';
const LIMITS = '/admin/limits/demo-dev-app';

/** The Development preset's policies, and the same doubled (" (x2)", as the brief names them). */
const DEVELOPMENT = ['global: 5 per 1 s', 'global: 200 per 60 s', 'throttle: 5 concurrent'];
const DOUBLED = DEVELOPMENT.map((name) => `${name} (x2)`);
const LIVE_POLICIES = presets.live.policies.map((p) => p.name);

describe('reference service: overrides in the admin API', () => {
  // One service for every test (each start of the embedded PostgreSQL takes seconds); each test
  // starts minutes later, with the Development client's limits reset and no override left.
  const clock = new FakeClock(Date.UTC(2030, 0, 1));
  let service: DemoService;
  beforeAll(async () => {
    service = await startDemo({ clock });
  });
  afterAll(() => service.close());
  beforeEach(async () => {
    clock.advance(600_000);
    expect((await call(service, `${LIMITS}/DEV-ACME`, ADMIN, undefined, 'DELETE')).status).toBe(
      200,
    );
    for (const query of ['', '?accountCode=DEV-ACME', '?accountCode=OTHER']) {
      await call(service, `${CLIENT}${query}`, ADMIN, undefined, 'DELETE');
    }
  });

  const put = (body: unknown, path = CLIENT, headers: Record<string, string> = ADMIN) =>
    call(service, path, { ...headers, 'content-type': 'application/json' }, body, 'PUT');

  /** The statuses of `n` calls of the Development client at one instant of the fake clock. */
  const burst = async (n: number): Promise<number[]> => {
    const statuses: number[] = [];
    for (let i = 0; i < n; i++) {
      statuses.push((await call(service, '/booking/v1/reservations', DEV)).status);
    }
    return statuses;
  };

  /** The names of the policies a peek of the client's account reports. */
  const policiesOf = async (accountCode: string) => {
    const peeked = await call(service, `${LIMITS}/${accountCode}`, ADMIN);
    expect(peeked.status).toBe(200);
    return (peeked.body.statuses as Array<{ policy: string }>).map((s) => s.policy);
  };

  const times = (n: number, status: number) => Array.from({ length: n }, () => status);

  it('PUT answers the override as held, GET lists the overrides in force, DELETE removes one and says whether there was one', async () => {
    const raised = await put({ multiplier: 2, expiresAt: '2030-06-01T12:00:00+02:00' });
    expect([raised.status, raised.body]).toEqual([
      200,
      { clientId: 'demo-dev-app', multiplier: 2, expiresAt: '2030-06-01T10:00:00.000Z' },
    ]);
    const account = await put({ preset: 'live', accountCode: 'DEV-ACME' });
    expect([account.status, account.body]).toEqual([
      200,
      { clientId: 'demo-dev-app', accountCode: 'DEV-ACME', preset: 'live' },
    ]);
    // A PUT replaces what the target had.
    const lowered = await put({ multiplier: 0.5, ttlSeconds: 90 });
    expect(lowered.body).toEqual({
      clientId: 'demo-dev-app',
      multiplier: 0.5,
      expiresAt: new Date(clock.now() + 90_000).toISOString(),
    });

    const listed = await call(service, CLIENT, ADMIN);
    expect([listed.status, listed.body]).toEqual([
      200,
      { clientId: 'demo-dev-app', overrides: [lowered.body, account.body] },
    ]);
    const one = await call(service, `${CLIENT}?accountCode=DEV-ACME`, ADMIN);
    expect(one.body).toEqual({
      clientId: 'demo-dev-app',
      accountCode: 'DEV-ACME',
      overrides: [account.body],
    });
    const other = await call(service, '/admin/overrides/someone-else', ADMIN);
    expect(other.body).toEqual({ clientId: 'someone-else', overrides: [] });
    const head = await fetch(`${service.url}${CLIENT}`, { method: 'HEAD', headers: ADMIN });
    expect([head.status, await head.text()]).toEqual([200, '']);

    const removeAccount = () =>
      call(service, `${CLIENT}?accountCode=DEV-ACME`, ADMIN, undefined, 'DELETE');
    expect((await removeAccount()).body).toEqual({
      clientId: 'demo-dev-app',
      accountCode: 'DEV-ACME',
      removed: true,
    });
    expect((await removeAccount()).body).toEqual({
      clientId: 'demo-dev-app',
      accountCode: 'DEV-ACME',
      removed: false,
    });
    const removeClient = await call(service, CLIENT, ADMIN, undefined, 'DELETE');
    expect([removeClient.status, removeClient.body]).toEqual([
      200,
      { clientId: 'demo-dev-app', removed: true },
    ]);
    expect((await call(service, CLIENT, ADMIN)).body.overrides).toEqual([]);
    // Percent-encoded ids are the ids they encode.
    const encoded = await put({ multiplier: 3 }, '/admin/overrides/a%2Fb%20c');
    expect(encoded.body).toEqual({ clientId: 'a/b c', multiplier: 3 });
    expect(
      (await call(service, '/admin/overrides/a%2Fb%20c', ADMIN, undefined, 'DELETE')).body,
    ).toEqual({ clientId: 'a/b c', removed: true });
  });

  it('admits a raised client where its default limits refuse, and refuses as before once the override is removed', async () => {
    expect(await burst(6)).toEqual([...times(5, 200), 429]);
    clock.advance(1_000);
    expect((await put({ multiplier: 2 })).status).toBe(200);
    expect(await policiesOf('DEV-ACME')).toEqual(DOUBLED);
    // Twice the 5 per second: ten admitted in one instant, the eleventh refused.
    expect(await burst(11)).toEqual([...times(10, 200), 429]);
    clock.advance(1_000);
    expect((await call(service, CLIENT, ADMIN, undefined, 'DELETE')).body.removed).toBe(true);
    expect(await policiesOf('DEV-ACME')).toEqual(DEVELOPMENT);
    expect(await burst(6)).toEqual([...times(5, 200), 429]);
  });

  it("gives an account's own override precedence over its client's, and the client's again once the account's is removed", async () => {
    await put({ multiplier: 2 });
    await put({ preset: 'live', accountCode: 'DEV-ACME' });
    expect(await policiesOf('DEV-ACME')).toEqual(LIVE_POLICIES);
    // Another account of the client has the client's override.
    expect(await policiesOf('OTHER')).toEqual(DOUBLED);
    // Live's 200 per second: the Development client's key is admitted 12 times in one instant.
    expect(await burst(12)).toEqual(times(12, 200));
    clock.advance(1_000);
    await call(service, `${CLIENT}?accountCode=DEV-ACME`, ADMIN, undefined, 'DELETE');
    expect(await policiesOf('DEV-ACME')).toEqual(DOUBLED);
    // An override of one account leaves the client's other accounts at their defaults.
    await call(service, CLIENT, ADMIN, undefined, 'DELETE');
    await put({ multiplier: 4, accountCode: 'OTHER' });
    expect(await policiesOf('DEV-ACME')).toEqual(DEVELOPMENT);
    expect(await policiesOf('OTHER')).toEqual(DEVELOPMENT.map((name) => `${name} (x4)`));
  });

  it('ends an override at its expiry on the service clock (ttlSeconds or expiresAt): the default limits apply again and GET no longer lists it', async () => {
    const raised = await put({ multiplier: 2, ttlSeconds: 60 });
    expect(raised.body.expiresAt).toBe(new Date(clock.now() + 60_000).toISOString());
    clock.advance(59_999);
    expect(await policiesOf('DEV-ACME')).toEqual(DOUBLED);
    expect(await burst(11)).toEqual([...times(10, 200), 429]);
    clock.advance(1);
    expect(await policiesOf('DEV-ACME')).toEqual(DEVELOPMENT);
    expect((await call(service, CLIENT, ADMIN)).body.overrides).toEqual([]);
    clock.advance(60_000);
    expect(await burst(6)).toEqual([...times(5, 200), 429]);

    const until = new Date(clock.now() + 30_000);
    const dated = await put({ preset: 'trial', expiresAt: until.toISOString() });
    expect(dated.body).toEqual({
      clientId: 'demo-dev-app',
      preset: 'trial',
      expiresAt: until.toISOString(),
    });
    expect((await call(service, CLIENT, ADMIN)).body.overrides).toEqual([dated.body]);
    clock.advance(30_000);
    expect((await call(service, CLIENT, ADMIN)).body.overrides).toEqual([]);
    expect(await policiesOf('DEV-ACME')).toEqual(DEVELOPMENT);
  });

  it('keeps what the client was admitted across a raise and its removal: the counters carry over', async () => {
    expect(await burst(3)).toEqual(times(3, 200));
    await put({ multiplier: 2 });
    // 3 of the raised 10 per second already spent: 7 more in the same instant, then a 429.
    expect(await burst(8)).toEqual([...times(7, 200), 429]);
    const raised = await call(service, `${LIMITS}/DEV-ACME`, ADMIN);
    expect(raised.body.statuses).toContainEqual(
      expect.objectContaining({ policy: 'global: 200 per 60 s (x2)', remaining: 400 - 10 }),
    );
    // Removed in the same instant: the 10 admitted count against the default 5 per second.
    await call(service, CLIENT, ADMIN, undefined, 'DELETE');
    expect(await burst(1)).toEqual([429]);
    const lowered = await call(service, `${LIMITS}/DEV-ACME`, ADMIN);
    expect(lowered.body.statuses).toContainEqual(
      expect.objectContaining({ policy: 'global: 200 per 60 s', remaining: 200 - 10 }),
    );
  });

  it('answers every bad body with a 400 problem naming what to change (a body too large with the service-wide 413), never a 500, and sets nothing', async () => {
    const library = new MemoryOverrides({ presets: presets.byAccountType });
    let unknownPreset = '';
    try {
      library.set({ clientId: 'demo-dev-app' }, { preset: 'nope' });
    } catch (error) {
      unknownPreset = (error as Error).message;
    }
    const past = new Date(clock.now() - 1).toISOString();
    const cases: Array<[body: string, status: number, code: string, detail: RegExp]> = [
      ['{"multiplier":', 400, 'invalid_json', /JSON/],
      ['', 400, 'invalid_body', /JSON object/],
      ['null', 400, 'invalid_body', /JSON object/],
      ['[{"multiplier":2}]', 400, 'invalid_body', /JSON object/],
      ['"x"', 400, 'invalid_body', /JSON object/],
      ['2', 400, 'invalid_body', /JSON object/],
      ['{"multiplier":2,"extra":1}', 400, 'unknown_field', /"extra"/],
      ['{"multiplier":2,"__proto__":{"preset":"live"}}', 400, 'unknown_field', /"__proto__"/],
      ['{"Multiplier":2}', 400, 'unknown_field', /"Multiplier"/],
      ['{}', 400, 'invalid_override', /exactly one of preset .* and multiplier/],
      ['{"multiplier":2,"preset":"live"}', 400, 'invalid_override', /exactly one/],
      ['{"multiplier":"2"}', 400, 'invalid_override', /multiplier must be a number/],
      ['{"multiplier":0}', 400, 'invalid_override', /multiplier must be/],
      ['{"multiplier":-2}', 400, 'invalid_override', /multiplier must be/],
      ['{"multiplier":1001}', 400, 'invalid_override', /at most 1000/],
      ['{"multiplier":1e400}', 400, 'invalid_override', /multiplier must be/],
      ['{"multiplier":null}', 400, 'invalid_override', /multiplier must be/],
      ['{"preset":""}', 400, 'invalid_override', /preset must be/],
      ['{"preset":["live"]}', 400, 'invalid_override', /preset must be/],
      ['{"multiplier":2,"accountCode":""}', 400, 'invalid_account_code', /accountCode/],
      ['{"multiplier":2,"accountCode":7}', 400, 'invalid_account_code', /accountCode/],
      ['{"multiplier":2,"accountCode":null}', 400, 'invalid_account_code', /accountCode/],
      [
        JSON.stringify({ multiplier: 2, accountCode: 'a'.repeat(257) }),
        400,
        'invalid_account_code',
        /at most 256/,
      ],
      ['{"multiplier":2,"expiresAt":"tomorrow"}', 400, 'invalid_override', /RFC 3339/],
      ['{"multiplier":2,"expiresAt":1893456000000}', 400, 'invalid_override', /RFC 3339/],
      ['{"multiplier":2,"expiresAt":"2031-02-29T00:00:00Z"}', 400, 'invalid_override', /RFC 3339/],
      ['{"multiplier":2,"expiresAt":"2031-01-01T24:00:00Z"}', 400, 'invalid_override', /RFC 3339/],
      ['{"multiplier":2,"expiresAt":"2031-01-01T00:00:00"}', 400, 'invalid_override', /RFC 3339/],
      [`{"multiplier":2,"expiresAt":"${past}"}`, 400, 'invalid_override', /has passed/],
      ['{"multiplier":2,"ttlSeconds":0}', 400, 'invalid_override', /ttlSeconds/],
      ['{"multiplier":2,"ttlSeconds":1.5}', 400, 'invalid_override', /whole number/],
      ['{"multiplier":2,"ttlSeconds":"60"}', 400, 'invalid_override', /ttlSeconds/],
      ['{"multiplier":2,"ttlSeconds":-60}', 400, 'invalid_override', /ttlSeconds/],
      ['{"multiplier":2,"ttlSeconds":1e12}', 400, 'invalid_override', /at most/],
      ['{"multiplier":2,"ttlSeconds":null}', 400, 'invalid_override', /ttlSeconds/],
      [
        '{"multiplier":2,"ttlSeconds":60,"expiresAt":"2031-01-01T00:00:00Z"}',
        400,
        'invalid_override',
        /not both/,
      ],
      [
        JSON.stringify({ multiplier: 2, pad: 'x'.repeat(70_000) }),
        413,
        'body_too_large',
        /at most/,
      ],
    ];
    for (const [body, status, code, detail] of cases) {
      const response = await fetch(`${service.url}${CLIENT}`, {
        method: 'PUT',
        headers: { ...ADMIN, 'content-type': 'application/json' },
        body,
      });
      const problem = (await response.json()) as { code: string; detail: string };
      expect([body.slice(0, 60), response.status, problem.code]).toEqual([
        body.slice(0, 60),
        status,
        code,
      ]);
      expect(response.headers.get('content-type')).toContain('application/problem+json');
      expect(problem.detail).toMatch(detail);
    }
    // A preset the service does not have: the library's own message.
    const nope = await put({ preset: 'nope' });
    expect([nope.status, nope.body.code, nope.body.detail]).toEqual([
      400,
      'unknown_preset',
      unknownPreset,
    ]);
    expect(unknownPreset).toContain('"live"');
    expect((await call(service, CLIENT, ADMIN)).body.overrides).toEqual([]);
    expect(await policiesOf('DEV-ACME')).toEqual(DEVELOPMENT);
  });

  it('answers bad paths, queries and methods with problem details: ids, encodings, parameters, 405 with Allow', async () => {
    const cases: Array<[method: string, path: string, status: number, code: string]> = [
      ['PUT', '/admin/overrides/', 400, 'invalid_client_id'],
      ['GET', '/admin/overrides/', 400, 'invalid_client_id'],
      ['DELETE', '/admin/overrides/', 400, 'invalid_client_id'],
      ['PUT', `/admin/overrides/${'c'.repeat(257)}`, 400, 'invalid_client_id'],
      ['GET', `/admin/overrides/${'%41'.repeat(257)}`, 400, 'invalid_client_id'],
      ['DELETE', `/admin/overrides/${'c'.repeat(257)}`, 400, 'invalid_client_id'],
      ['PUT', '/admin/overrides/%ZZ', 400, 'invalid_path_encoding'],
      ['GET', '/admin/overrides/%E0%A4%A', 400, 'invalid_path_encoding'],
      ['PUT', `${CLIENT}?accountCode=DEV-ACME`, 400, 'unknown_parameter'],
      ['DELETE', `${CLIENT}?account=DEV-ACME`, 400, 'unknown_parameter'],
      ['GET', `${CLIENT}?accountType=live`, 400, 'unknown_parameter'],
      ['DELETE', `${CLIENT}?accountCode=A&accountCode=B`, 400, 'repeated_parameter'],
      ['DELETE', `${CLIENT}?accountCode=`, 400, 'invalid_account_code'],
      ['GET', `${CLIENT}?accountCode=`, 400, 'invalid_account_code'],
      ['DELETE', `${CLIENT}?accountCode=${'a'.repeat(257)}`, 400, 'invalid_account_code'],
      ['POST', CLIENT, 405, 'method_not_allowed'],
      ['PATCH', CLIENT, 405, 'method_not_allowed'],
      ['GET', '/admin/overrides', 404, 'not_found'],
      ['PUT', `${CLIENT}/DEV-ACME`, 404, 'not_found'],
    ];
    for (const [method, path, status, code] of cases) {
      const response = await call(
        service,
        path,
        { ...ADMIN, 'content-type': 'application/json' },
        method === 'PUT' || method === 'POST' || method === 'PATCH' ? { multiplier: 2 } : undefined,
        method,
      );
      expect([method, path.slice(0, 60), response.status, response.body.code]).toEqual([
        method,
        path.slice(0, 60),
        status,
        code,
      ]);
      expect(response.headers.get('content-type')).toContain('application/problem+json');
      expect(response.body.detail).toEqual(expect.any(String));
      if (status === 405) expect(response.headers.get('allow')).toBe('GET, PUT, DELETE, HEAD');
    }
    expect((await call(service, CLIENT, ADMIN)).body.overrides).toEqual([]);
  });

  it('answers any JSON body with 200 or a 400 problem, never anything else (property)', async () => {
    // Bodies that are right, one field away from right, with fields of any JSON, or any JSON.
    const anything = fc.oneof(
      fc.jsonValue(),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.integer({ min: -10, max: 2_000 }),
      fc.constantFrom('live', 'nope', '', 'DEV-ACME'),
    );
    const future = fc
      .integer({ min: 1, max: 10 ** 11 })
      .map((ms) => new Date(clock.now() + ms).toISOString());
    const right = fc
      .tuple(
        fc.oneof(
          fc.record({ multiplier: fc.double({ min: 0.001, max: 1_000, noNaN: true }) }),
          fc.record({ preset: fc.constantFrom('live', 'development', 'trial') }),
        ),
        fc.option(fc.record({ accountCode: fc.string({ minLength: 1, maxLength: 20 }) })),
        fc.option(
          fc.oneof(
            fc.record({ expiresAt: future }),
            fc.record({ ttlSeconds: fc.integer({ min: 1, max: 10 ** 6 }) }),
          ),
        ),
      )
      .map((parts) => Object.assign({}, ...parts) as Record<string, unknown>);
    const field = fc.constantFrom('multiplier', 'preset', 'accountCode', 'expiresAt', 'ttlSeconds');
    const oneAway = fc
      .tuple(right, field, anything)
      .map(([body, name, value]) => ({ ...body, [name]: value }));
    const body = fc.oneof(
      right,
      oneAway,
      fc.dictionary(fc.oneof(field, fc.string()), anything, { maxKeys: 4 }),
      fc.jsonValue(),
    );
    await fc.assert(
      fc.asyncProperty(body, async (sent) => {
        const response = await put(sent, '/admin/overrides/property-client');
        expect([200, 400]).toContain(response.status);
        if (response.status === 400) {
          expect(response.headers.get('content-type')).toContain('application/problem+json');
          expect(response.body.code).toEqual(expect.any(String));
          expect(response.body.detail).toEqual(expect.any(String));
          return;
        }
        expect(response.body.clientId).toBe('property-client');
        const accountCode = response.body.accountCode as string | undefined;
        const query =
          accountCode === undefined ? '' : `?accountCode=${encodeURIComponent(accountCode)}`;
        const removed = await call(
          service,
          `/admin/overrides/property-client${query}`,
          ADMIN,
          undefined,
          'DELETE',
        );
        expect(removed.body.removed).toBe(true);
      }),
      { numRuns: 200 },
    );
  });

  it('takes no override without the admin key: 401 for every verb, and nothing set', async () => {
    for (const headers of [
      {},
      { 'x-admin-key': 'admin-demo-key2' },
      { 'x-admin-key': '' },
      { 'x-api-key': 'admin-demo-key' },
      DEV,
      { authorization: 'Basic admin-demo-key' },
    ]) {
      for (const method of ['PUT', 'GET', 'DELETE', 'POST']) {
        const refused = await call(
          service,
          CLIENT,
          { ...headers, 'content-type': 'application/json' },
          method === 'PUT' || method === 'POST' ? { multiplier: 100 } : undefined,
          method,
        );
        expect([method, refused.status, refused.body.code]).toEqual([
          method,
          401,
          'unauthenticated',
        ]);
      }
    }
    expect((await call(service, CLIENT, ADMIN)).body.overrides).toEqual([]);
    expect(await burst(6)).toEqual([...times(5, 200), 429]);
    // The key as a bearer token is the key.
    const bearer = await put({ multiplier: 2 }, CLIENT, { authorization: 'Bearer admin-demo-key' });
    expect(bearer.status).toBe(200);
  });
});
