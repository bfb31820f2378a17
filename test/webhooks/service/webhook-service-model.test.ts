/**
 * The API through `fetch` against a model written from the specification's words and the service's documentation: every account sees only
 * its own subscriptions, in creation order, as last changed; deleted ones are gone; publishing
 * matches the account's enabled subscriptions by kind, wildcard and property.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../../src/index.js';
import { ACCOUNTS, kindArb, PROPERTIES, patternArb } from '../../support/webhook-arbitraries.js';
import { call, START, serviceSetup } from '../../support/webhook-service.js';

interface ModelSubscription {
  id: string;
  account: string;
  endpointUrl: string;
  events: string[];
  propertyIds: string[] | undefined;
  status: 'enabled' | 'disabled';
  /** While disabled by a PATCH: when it was (a later PATCH that keeps it disabled keeps it). */
  disabledAt: string | undefined;
  createdAt: string;
  updatedAt: string;
}

const MAX_PER_ACCOUNT = 3;
const ENDPOINTS = ['https://a.example.com/in', 'https://b.example.com/hook'];

const accountArb = fc.constantFrom(...ACCOUNTS);
// An index into the ids created so far (any account's), or an id never created.
const idRefArb = fc.oneof(fc.nat(30), fc.constant(-1));
const eventsArb = fc.uniqueArray(patternArb, { minLength: 1, maxLength: 3 });
const propertyIdsArb = fc.option(
  fc.uniqueArray(fc.constantFrom(...PROPERTIES), { minLength: 1, maxLength: 2 }),
  { nil: undefined },
);

const opArb = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('create' as const),
      account: accountArb,
      valid: fc.boolean(),
      endpointUrl: fc.constantFrom(...ENDPOINTS),
      events: eventsArb,
      propertyIds: propertyIdsArb,
    }),
  },
  fc.record({ op: fc.constant('read' as const), account: accountArb, id: idRefArb }),
  fc.record({
    op: fc.constant('patch' as const),
    account: accountArb,
    id: idRefArb,
    change: fc.record(
      {
        endpointUrl: fc.constantFrom(...ENDPOINTS),
        events: eventsArb,
        propertyIds: fc.option(
          fc.uniqueArray(fc.constantFrom(...PROPERTIES), { minLength: 1, maxLength: 2 }),
          { nil: null },
        ),
        status: fc.constantFrom('enabled' as const, 'disabled' as const),
      },
      { requiredKeys: [] },
    ),
  }),
  fc.record({ op: fc.constant('delete' as const), account: accountArb, id: idRefArb }),
  fc.record({ op: fc.constant('rotate' as const), account: accountArb, id: idRefArb }),
  fc.record({
    op: fc.constant('list' as const),
    account: accountArb,
    pageNumber: fc.integer({ min: 1, max: 3 }),
    pageSize: fc.integer({ min: 1, max: 3 }),
  }),
  fc.record({
    op: fc.constant('publish' as const),
    account: accountArb,
    kind: kindArb,
    propertyId: fc.option(fc.constantFrom(...PROPERTIES), { nil: undefined }),
  }),
  fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 5000 }) }),
);

const view = (s: ModelSubscription) => ({
  id: s.id,
  endpointUrl: s.endpointUrl,
  events: s.events,
  ...(s.propertyIds === undefined ? {} : { propertyIds: s.propertyIds }),
  // None named on create: the default.
  signatureType: 'hmac-sha256',
  status: s.status,
  // A subscription disabled by its owner says so, and since when.
  ...(s.status === 'disabled' ? { disabledReason: 'requested', disabledAt: s.disabledAt } : {}),
  createdAt: s.createdAt,
  updatedAt: s.updatedAt,
});

// The specification's matching: an event of the account, a kind named or under a topic wildcard, and the
// property listed (an event without a property reaches only subscriptions to every property).
const matches = (
  s: ModelSubscription,
  account: string,
  kind: string,
  propertyId: string | undefined,
) =>
  s.account === account &&
  s.status === 'enabled' &&
  s.events.some((p) => p === kind || (p.endsWith('/*') && kind.startsWith(p.slice(0, -1)))) &&
  (s.propertyIds === undefined || (propertyId !== undefined && s.propertyIds.includes(propertyId)));

describe('createWebhookService: random API calls from several accounts agree with a model', () => {
  it('every status and body matches the model, and no account reaches another account’s subscription', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(opArb, { minLength: 10, maxLength: 50, size: 'max' }),
        async (ops) => {
          // Arrange
          const clock = new FakeClock(START);
          let n = 0;
          const { service } = serviceSetup({
            clock,
            generateId: () => `sub-${String(++n).padStart(4, '0')}`,
            maxSubscriptionsPerAccount: MAX_PER_ACCOUNT,
            queue: () => ({ enqueue: async () => undefined, close: async () => [] }),
          });
          const model: ModelSubscription[] = [];
          const everId: string[] = [];
          const idOf = (ref: number) =>
            ref < 0 || everId.length === 0 ? 'never-made' : everId[ref % everId.length]!;
          try {
            for (const step of ops) {
              // Act and Assert, call by call
              const iso = new Date(clock.now()).toISOString();
              if (step.op === 'advance') {
                clock.advance(step.ms);
                continue;
              }
              const owned = (id: string) =>
                model.find((s) => s.id === id && s.account === step.account);
              const as = { account: step.account };
              switch (step.op) {
                case 'create': {
                  const body = {
                    endpointUrl: step.endpointUrl,
                    events: step.valid ? step.events : [],
                    ...(step.propertyIds === undefined ? {} : { propertyIds: step.propertyIds }),
                  };
                  const answer = await call(service, 'POST', '/v1/subscriptions', { ...as, body });
                  const held = model.filter((s) => s.account === step.account).length;
                  if (!step.valid) expect(answer.status).toBe(400);
                  else if (held >= MAX_PER_ACCOUNT) expect(answer.status).toBe(409);
                  else {
                    const made: ModelSubscription = {
                      id: `sub-${String(n).padStart(4, '0')}`,
                      account: step.account,
                      endpointUrl: step.endpointUrl,
                      events: step.events,
                      propertyIds: step.propertyIds,
                      status: 'enabled',
                      disabledAt: undefined,
                      createdAt: iso,
                      updatedAt: iso,
                    };
                    model.push(made);
                    everId.push(made.id);
                    expect(answer.status).toBe(201);
                    expect(answer.body).toEqual({
                      ...view(made),
                      secret: expect.stringMatching(/^whsec_/),
                    });
                  }
                  break;
                }
                case 'read': {
                  const id = idOf(step.id);
                  const answer = await call(service, 'GET', `/v1/subscriptions/${id}`, as);
                  const held = owned(id);
                  expect(answer.status).toBe(held === undefined ? 404 : 200);
                  if (held !== undefined) expect(answer.body).toEqual(view(held));
                  break;
                }
                case 'patch': {
                  const id = idOf(step.id);
                  const answer = await call(service, 'PATCH', `/v1/subscriptions/${id}`, {
                    ...as,
                    body: step.change,
                  });
                  const held = owned(id);
                  if (Object.keys(step.change).length === 0) expect(answer.status).toBe(400);
                  else if (held === undefined) expect(answer.status).toBe(404);
                  else {
                    const { change } = step;
                    if (change.endpointUrl !== undefined) held.endpointUrl = change.endpointUrl;
                    if (change.events !== undefined) held.events = change.events;
                    if (change.propertyIds !== undefined)
                      held.propertyIds = change.propertyIds ?? undefined;
                    if (change.status === 'disabled') held.disabledAt = iso;
                    if (change.status === 'enabled') held.disabledAt = undefined;
                    if (change.status !== undefined) held.status = change.status;
                    held.updatedAt = iso;
                    expect(answer.status).toBe(200);
                    expect(answer.body).toEqual(view(held));
                  }
                  break;
                }
                case 'delete': {
                  const id = idOf(step.id);
                  const answer = await call(service, 'DELETE', `/v1/subscriptions/${id}`, as);
                  const held = owned(id);
                  expect(answer.status).toBe(held === undefined ? 404 : 204);
                  if (held !== undefined) model.splice(model.indexOf(held), 1);
                  break;
                }
                case 'rotate': {
                  const id = idOf(step.id);
                  const answer = await call(
                    service,
                    'POST',
                    `/v1/subscriptions/${id}/secret/rotate`,
                    as,
                  );
                  expect(answer.status).toBe(owned(id) === undefined ? 404 : 200);
                  break;
                }
                case 'list': {
                  const { pageNumber, pageSize } = step;
                  const answer = await call(
                    service,
                    'GET',
                    `/v1/subscriptions?pageNumber=${pageNumber}&pageSize=${pageSize}`,
                    as,
                  );
                  const mine = model.filter((s) => s.account === step.account);
                  expect(answer.status).toBe(200);
                  expect(answer.body.totalItems).toBe(mine.length);
                  expect(answer.body.items).toEqual(
                    mine.slice((pageNumber - 1) * pageSize, pageNumber * pageSize).map(view),
                  );
                  break;
                }
                case 'publish': {
                  const { account, kind, propertyId } = step;
                  const published = await service.publish({
                    accountCode: account,
                    kind,
                    propertyId,
                  });
                  const expected = model
                    .filter((s) => matches(s, account, kind, propertyId))
                    .map((s) => s.id);
                  expect([...published.deliveries].sort()).toEqual(expected.sort());
                  break;
                }
              }
            }
          } finally {
            await service.close();
          }
        },
      ),
      { numRuns: 100 },
    );
  });
});
