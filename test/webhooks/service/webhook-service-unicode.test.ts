/**
 * Strings that are not well-formed Unicode (a lone UTF-16 surrogate) in a create or PATCH body:
 * refused with 400 and the value's JSON pointer, on the memory repository and on PGlite alike, so
 * that no backend stores something the others would not (PGlite writes U+FFFD in its place).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SubscriptionRepository } from '../../../src/index.js';
import { MemorySubscriptionRepository, validateSubscriptionRequest } from '../../../src/index.js';
import { TestDatabases } from '../../postgres/databases.js';
import { pgliteInMemory } from '../../support/pglite-template.js';
import { call, serviceSetup, subscriptionBody } from '../../support/webhook-service.js';

const databases = new TestDatabases();
// PGlite alone: the file needs no PostgreSQL server.
beforeAll(async () => {
  databases.lite = await pgliteInMemory();
});
afterAll(() => databases.stop());

const repositories: Record<string, () => Promise<SubscriptionRepository>> = {
  memory: async () => new MemorySubscriptionRepository(),
  PGlite: () => databases.open('pglite'),
};

const HIGH = '\uD800';
const LOW = '\uDC00';

describe.each(Object.keys(repositories))('a lone surrogate through the API on %s', (name) => {
  let setup: ReturnType<typeof serviceSetup>;
  beforeAll(async () => {
    setup = serviceSetup({ repository: await repositories[name]!() });
  });
  afterAll(async () => {
    await setup.service.close();
    await setup.repository.close?.();
  });

  it('refuses it on create with 400 and the pointer of each string that holds one', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ propertyIds: [`BER${HIGH}`] }, '/propertyIds/0'],
      [{ propertyIds: ['BER', `${LOW}x`] }, '/propertyIds/1'],
      [{ events: ['folio/created', `reservation/${HIGH}`] }, '/events/1'],
      [{ endpointUrl: `https://hooks.example.com/in${HIGH}` }, '/endpointUrl'],
    ];
    for (const [over, path] of cases) {
      const answer = await call(setup.service, 'POST', '/v1/subscriptions', {
        body: subscriptionBody(over),
      });
      expect(answer.status, path).toBe(400);
      expect(answer.body.errors, path).toEqual([
        expect.objectContaining({ code: 'lone_surrogate', path }),
      ]);
    }
    const listed = await call(setup.service, 'GET', '/v1/subscriptions');
    expect(listed.body.totalItems).toBe(0);
  });

  it('refuses it on PATCH with 400 and its pointer, and leaves the subscription as it was', async () => {
    const created = await call(setup.service, 'POST', '/v1/subscriptions', {
      body: subscriptionBody({ propertyIds: ['BER'] }),
    });
    expect(created.status).toBe(201);
    const path = `/v1/subscriptions/${created.body.id}`;
    const cases: [Record<string, unknown>, string][] = [
      [{ propertyIds: ['BER', `MUC${LOW}`] }, '/propertyIds/1'],
      [{ events: [`${HIGH}/created`] }, '/events/0'],
      [{ endpointUrl: `https://hooks.example.com/${LOW}` }, '/endpointUrl'],
    ];
    for (const [body, pointer] of cases) {
      const answer = await call(setup.service, 'PATCH', path, { body });
      expect(answer.status, pointer).toBe(400);
      expect(answer.body.errors, pointer).toEqual([
        expect.objectContaining({ code: 'lone_surrogate', path: pointer }),
      ]);
    }
    const read = await call(setup.service, 'GET', path);
    expect(read.body).toMatchObject({
      endpointUrl: 'https://hooks.example.com/in',
      events: ['reservation/*'],
      propertyIds: ['BER'],
    });
  });

  it('stores a well-formed astral character (a whole surrogate pair) as sent', async () => {
    const created = await call(setup.service, 'POST', '/v1/subscriptions', {
      body: subscriptionBody({ propertyIds: ['H\u{1F3E8}'] }),
    });
    expect(created.status).toBe(201);
    const read = await call(setup.service, 'GET', `/v1/subscriptions/${created.body.id}`);
    expect(read.body.propertyIds).toEqual(['H\u{1F3E8}']);
  });
});

describe('validateSubscriptionRequest and lone surrogates', () => {
  // The oracle: a string is refused for its surrogates exactly when it is not well-formed Unicode.
  const wellFormed = (value: string) => !/\p{Cs}/u.test(value);
  const units = fc.constantFrom('A', '1', '-', HIGH, LOW, '\u{1F3E8}', 'é');
  const id = fc.array(units, { minLength: 1, maxLength: 8 }).map((parts) => parts.join(''));

  it('reports lone_surrogate at a property id exactly when that id is not well-formed', () => {
    fc.assert(
      fc.property(fc.uniqueArray(id, { minLength: 1, maxLength: 5 }), (ids) => {
        const result = validateSubscriptionRequest(subscriptionBody({ propertyIds: ids }));
        const refused = result.ok
          ? []
          : result.issues.filter((i) => i.code === 'lone_surrogate').map((i) => i.path);
        const expected = ids.flatMap((value, i) =>
          wellFormed(value) ? [] : [`/propertyIds/${i}`],
        );
        expect(refused).toEqual(expected);
        if (expected.length === 0) expect(result.ok).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});
