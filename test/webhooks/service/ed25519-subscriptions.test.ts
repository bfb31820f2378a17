/**
 * Ed25519 (`v1a`) subscriptions of the webhook service on memory, PGlite and PostgreSQL, over real
 * HTTP to a real receiver: a create with `signatureType: "ed25519"` answers a `whpk_` public key
 * and never a secret, its deliveries carry `v1a,<signature>` over `{webhook-id}.{webhook-timestamp}.{body}`
 * (checked with `verifyWebhook` and with node:crypto's ed25519 as the Standard Webhooks text
 * states it), its `whsk_` key is kept as secrets are (encrypted at rest where keys are given); a
 * rotation and a change of type give a new key of the type, and the old one signs through the
 * grace only.
 */
import { createPublicKey, verify } from 'node:crypto';
import { createServer } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeFetchHandler } from '../../../src/adapters/node.js';
import {
  FakeClock,
  httpTransport,
  MemorySubscriptionRepository,
  type SubscriptionRepository,
  verifyWebhook,
  webhookPublicKeyOf,
} from '../../../src/index.js';
import { DATABASES, TestDatabases } from '../../postgres/databases.js';
import type { StartedServer } from '../../support/adapter-suite.js';
import { eventually } from '../../support/eventually.js';
import { exchange } from '../../support/fetch-echo.js';
import { listen } from '../../support/listen.js';
import {
  type ReceivedDelivery,
  startReceiver,
  type WebhookReceiver,
} from '../../support/webhook-receiver.js';
import { closingSetup, type ServiceSetup, START } from '../../support/webhook-service.js';

const GRACE_MS = 60_000;
const SECRET_KEY = { id: 'k1', key: Buffer.alloc(32, 7).toString('base64') };

const dbs = new TestDatabases();
const setup = closingSetup();
let receiver: WebhookReceiver;
beforeAll(async () => {
  [receiver] = await Promise.all([startReceiver(), dbs.start()]);
});
afterAll(async () => {
  await receiver?.close();
  await dbs.stop();
});

/** A repository of each kind; for PostgreSQL and PGlite, with keys and the raw secrets column. */
interface Backend {
  readonly repository: SubscriptionRepository;
  /** The secrets column as stored; none for memory. */
  readonly storedSecrets: () => Promise<string[]>;
}

const BACKENDS: Record<string, () => Promise<Backend>> = {
  memory: async () => ({
    repository: new MemorySubscriptionRepository(),
    storedSecrets: async () => [],
  }),
  ...Object.fromEntries(
    DATABASES.map((name) => [
      name === 'pg' ? 'PostgreSQL' : 'PGlite',
      async (): Promise<Backend> => {
        const schema = dbs.schema();
        const repository = await dbs.open(name, { schema, secretKeys: [SECRET_KEY] });
        return {
          repository,
          storedSecrets: async () => {
            const { rows } = await dbs
              .database(name)
              .query(`SELECT secret FROM "${schema}".signing_secrets`);
            return (rows as { secret: string }[]).map((row) => row.secret);
          },
        };
      },
    ]),
  ),
};

/** A service on the backend, its API served over node:http, delivering over real HTTP. */
interface Served extends ServiceSetup {
  readonly backend: Backend;
  /** Every answer's text so far: none may hold a signing key. */
  readonly answers: string[];
  call(
    method: string,
    path: string,
    body?: unknown,
    // biome-ignore lint/suspicious/noExplicitAny: a parsed JSON body, read by the tests
  ): Promise<{ status: number; body: any }>;
  /** Publish an event the subscriptions match, and the delivery the receiver got of it. */
  deliver(): Promise<ReceivedDelivery>;
}

const servers: StartedServer[] = [];
afterAll(() => Promise.all(servers.map((server) => server.close())));

async function served(backend: Backend): Promise<Served> {
  const made = setup({
    repository: backend.repository,
    clock: new FakeClock(START),
    secretGracePeriodMs: GRACE_MS,
    endpointUrl: { allowHttp: true, allow: ['127.0.0.1'] },
    delivery: { transport: httpTransport({ allow: ['127.0.0.1'] }) },
  });
  const server = await listen(createServer(nodeFetchHandler(made.service)));
  servers.push(server);
  const answers: string[] = [];
  return {
    ...made,
    backend,
    answers,
    async call(method, path, body) {
      const answer = await exchange(server.url, path, {
        method,
        headers: { 'x-account': 'ACME', 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      answers.push(answer.body);
      return {
        status: answer.status,
        body: answer.body === '' ? undefined : JSON.parse(answer.body),
      };
    },
    async deliver() {
      const { id } = await made.service.publish({
        accountCode: 'ACME',
        kind: 'reservation/created',
      });
      return eventually(`the delivery of ${id}`, () =>
        receiver.received.find((d) => d.headers['webhook-id'] === id),
      );
    },
  };
}

let paths = 0;
/** Create a subscription to the receiver, with the fields given. */
const create = (service: Served, fields: Record<string, unknown> = {}) =>
  service.call('POST', '/v1/subscriptions', {
    endpointUrl: `${receiver.url}/in-${++paths}`,
    events: ['reservation/*'],
    ...fields,
  });

/** The versions of a delivery's signatures (`v1`, `v1a`), in the header's order. */
const versions = (delivery: ReceivedDelivery): string[] =>
  entries(delivery).map((entry) => entry.slice(0, entry.indexOf(',')));

/** The entries of a delivery's `webhook-signature` header. */
const entries = (delivery: ReceivedDelivery): string[] =>
  String(delivery.headers['webhook-signature']).split(' ');

/**
 * Whether one `v1a` entry is the ed25519 signature, under the `whpk_` key (`whpk_` and the base64
 * of the 32-byte public key), of `{webhook-id}.{webhook-timestamp}.{body}`: read as the Standard
 * Webhooks text states it, with node:crypto alone.
 */
function ed25519Signed(delivery: ReceivedDelivery, publicKey: string): boolean {
  const raw = Buffer.from(publicKey.slice('whpk_'.length), 'base64');
  const key = createPublicKey({
    key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') },
    format: 'jwk',
  });
  const { headers } = delivery;
  const content = Buffer.from(
    `${headers['webhook-id']}.${headers['webhook-timestamp']}.${delivery.body}`,
    'utf8',
  );
  return entries(delivery).some(
    (entry) =>
      entry.startsWith('v1a,') &&
      verify(null, content, key, Buffer.from(entry.slice('v1a,'.length), 'base64')),
  );
}

/** Whether the library's receiver side verifies the delivery with this one key. */
const verifies = (service: Served, delivery: ReceivedDelivery, key: string): boolean =>
  verifyWebhook(
    delivery.body,
    delivery.headers as Record<string, string>,
    key.startsWith('whpk_')
      ? { publicKeys: [key], clock: service.clock }
      : { secrets: [key], clock: service.clock },
  ).ok;

describe.each(Object.keys(BACKENDS))('ed25519 subscriptions on %s', (name) => {
  const start = async () => served(await (BACKENDS[name] as () => Promise<Backend>)());

  it('a create answers a whpk_ publicKey and no secret; deliveries carry v1a over {id}.{timestamp}.{body}; reads show the publicKey; the whsk_ key is kept encrypted', async () => {
    const service = await start();
    const created = await create(service, { signatureType: 'ed25519' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ signatureType: 'ed25519' });
    expect(created.body).not.toHaveProperty('secret');
    const publicKey: string = created.body.publicKey;
    expect(publicKey).toMatch(/^whpk_[A-Za-z0-9+/]{43}=$/);

    const delivery = await service.deliver();
    expect(versions(delivery)).toEqual(['v1a']);
    expect(ed25519Signed(delivery, publicKey)).toBe(true);
    expect(verifies(service, delivery, publicKey)).toBe(true);

    const read = await service.call('GET', `/v1/subscriptions/${created.body.id}`);
    expect(read.body).toMatchObject({ signatureType: 'ed25519', publicKey });
    expect(read.body).not.toHaveProperty('secret');
    const listed = await service.call('GET', '/v1/subscriptions');
    expect(listed.body.items).toEqual([
      expect.objectContaining({ id: created.body.id, publicKey }),
    ]);

    // The signing key is where secrets are, and no answer shows it.
    const [signingKey] = await service.repository.signingSecrets('ACME', created.body.id, START);
    expect(signingKey?.startsWith('whsk_')).toBe(true);
    expect(webhookPublicKeyOf(signingKey as string)).toBe(publicKey);
    for (const text of service.answers) {
      expect(text).not.toContain('whsk_');
      expect(text).not.toContain((signingKey as string).slice('whsk_'.length));
    }
    if (name !== 'memory') {
      const stored = await service.backend.storedSecrets();
      expect(stored).toHaveLength(1);
      expect(stored[0]).toMatch(/^gcm1\.k1\./);
      expect(stored[0]).not.toContain('whsk_');
    }
  });

  it('a rotation answers a new publicKey and previousSecretsExpireAt; both keys sign (two v1a) through the grace, only the new one after', async () => {
    const service = await start();
    const created = await create(service, { signatureType: 'ed25519' });
    const oldKey: string = created.body.publicKey;
    service.clock.advance(1_000);
    const rotated = await service.call(
      'POST',
      `/v1/subscriptions/${created.body.id}/secret/rotate`,
    );
    expect(rotated.status).toBe(200);
    expect(rotated.body).toEqual({
      publicKey: expect.stringMatching(/^whpk_/),
      previousSecretsExpireAt: new Date(START + 1_000 + GRACE_MS).toISOString(),
    });
    const newKey: string = rotated.body.publicKey;
    expect(newKey).not.toBe(oldKey);
    const read = await service.call('GET', `/v1/subscriptions/${created.body.id}`);
    expect(read.body.publicKey).toBe(newKey);

    service.clock.advance(GRACE_MS - 1);
    const during = await service.deliver();
    expect(versions(during)).toEqual(['v1a', 'v1a']);
    for (const key of [oldKey, newKey]) {
      expect(ed25519Signed(during, key)).toBe(true);
      expect(verifies(service, during, key)).toBe(true);
    }

    service.clock.advance(1);
    const after = await service.deliver();
    expect(entries(after)).toHaveLength(1);
    expect(verifies(service, after, newKey)).toBe(true);
    expect(ed25519Signed(after, oldKey)).toBe(false);
    expect(verifies(service, after, oldKey)).toBe(false);
    for (const text of service.answers) expect(text).not.toContain('whsk_');
  });

  it('a PATCH of signatureType rotates to a key of the new type, the old signing through the grace; a PATCH to the same type changes nothing', async () => {
    const service = await start();
    const created = await create(service);
    const path = `/v1/subscriptions/${created.body.id}`;
    const secret: string = created.body.secret;
    expect(created.body).not.toHaveProperty('publicKey');

    // The same type: no new secret, nothing changed.
    const same = await service.call('PATCH', path, { signatureType: 'hmac-sha256' });
    expect(same.status).toBe(200);
    const { secret: _, ...view } = created.body;
    expect(same.body).toEqual(view);

    service.clock.advance(1_000);
    const toEd = await service.call('PATCH', path, {
      signatureType: 'ed25519',
      description: 'moving',
    });
    expect(toEd.status).toBe(200);
    expect(toEd.body).toMatchObject({
      signatureType: 'ed25519',
      description: 'moving',
      publicKey: expect.stringMatching(/^whpk_/),
      previousSecretsExpireAt: new Date(START + 1_000 + GRACE_MS).toISOString(),
      updatedAt: new Date(START + 1_000).toISOString(),
    });
    expect(toEd.body).not.toHaveProperty('secret');
    const publicKey: string = toEd.body.publicKey;
    const during = await service.deliver();
    expect(versions(during).sort()).toEqual(['v1', 'v1a']);
    expect(verifies(service, during, secret)).toBe(true);
    expect(ed25519Signed(during, publicKey)).toBe(true);
    expect(verifies(service, during, publicKey)).toBe(true);

    // Again ed25519: nothing changes, the key stays.
    const again = await service.call('PATCH', path, { signatureType: 'ed25519' });
    expect(again.body).not.toHaveProperty('previousSecretsExpireAt');
    expect(again.body.publicKey).toBe(publicKey);

    service.clock.advance(GRACE_MS);
    const after = await service.deliver();
    expect(entries(after)).toHaveLength(1);
    expect(verifies(service, after, publicKey)).toBe(true);
    expect(verifies(service, after, secret)).toBe(false);

    // And back: a new secret, shown once; the ed25519 key signs through the grace.
    const toHmac = await service.call('PATCH', path, { signatureType: 'hmac-sha256' });
    expect(toHmac.body).toMatchObject({
      signatureType: 'hmac-sha256',
      secret: expect.stringMatching(/^whsec_/),
    });
    expect(toHmac.body).not.toHaveProperty('publicKey');
    const back = await service.deliver();
    expect(verifies(service, back, toHmac.body.secret)).toBe(true);
    expect(verifies(service, back, publicKey)).toBe(true);
    const read = await service.call('GET', path);
    expect(read.body).not.toHaveProperty('publicKey');
    expect(read.body).not.toHaveProperty('secret');
    for (const text of service.answers) expect(text).not.toContain('whsk_');
  });
});
