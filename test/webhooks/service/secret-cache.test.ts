/**
 * The signing secrets an instance keeps between attempts, against the rules of rotation: "every
 * secret it had keeps signing until at + graceMs (an earlier expiry stays), the new one from now
 * on". Whatever the rotations, the grace and the time between attempts, each delivery is signed
 * with exactly the secrets that sign at its attempt's time, newest first: never one past its
 * grace end, never without the newest. The secrets are read from the repository once per version
 * of the subscription while one secret alone signs.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  MemorySubscriptionRepository,
  signWebhook,
  type TransportRequest,
  type WebhookService,
} from '../../../src/index.js';
import {
  call,
  closingSetup,
  repositoryWith,
  subscriptionBody,
  until,
} from '../../support/webhook-service.js';

const setup = closingSetup();

/** What the oracle holds of a secret: until when it signs (undefined: until a rotation). */
interface Held {
  readonly secret: string;
  until: number | undefined;
}

/** A memory repository that counts its `signingSecrets` reads. */
function countingSecretReads() {
  const inner = new MemorySubscriptionRepository();
  const reads = { count: 0 };
  const repository = repositoryWith(inner, {
    signingSecrets: (...args: Parameters<MemorySubscriptionRepository['signingSecrets']>) => {
      reads.count += 1;
      return inner.signingSecrets(...args);
    },
  });
  return { repository, reads };
}

/** Publish an event the subscription matches and wait for its one request. */
async function deliverOne(service: WebhookService, sent: readonly TransportRequest[]) {
  const before = sent.length;
  await service.publish({ accountCode: 'ACME', kind: 'reservation/created' });
  await until(() => sent.length === before + 1, 'the delivery');
  return sent[before]!;
}

type Step =
  | { readonly op: 'rotate' }
  | { readonly op: 'advance'; readonly ms: number }
  | { readonly op: 'deliver' };

const step = fc.oneof(
  { weight: 2, arbitrary: fc.constant<Step>({ op: 'rotate' }) },
  {
    weight: 3,
    arbitrary: fc
      .oneof(fc.constantFrom(0, 1, 999, 1_000, 1_001), fc.nat({ max: 5_000 }))
      .map((ms): Step => ({ op: 'advance', ms })),
  },
  { weight: 4, arbitrary: fc.constant<Step>({ op: 'deliver' }) },
);

describe('the signing secrets an instance keeps', () => {
  it('signs each delivery with exactly the secrets that sign at its time, whatever the rotations and the grace', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(0, 1, 1_000, 3_000, 86_400_000),
        fc.array(step, { minLength: 1, maxLength: 25 }),
        async (graceMs, script) => {
          const { service, sent, clock } = setup({ secretGracePeriodMs: graceMs });
          const created = await call(service, 'POST', '/v1/subscriptions', {
            body: subscriptionBody(),
          });
          expect(created.status).toBe(201);
          const held: Held[] = [{ secret: created.body.secret, until: undefined }];
          for (const s of script) {
            if (s.op === 'advance') clock.advance(s.ms);
            else if (s.op === 'rotate') {
              const at = clock.now();
              const rotated = await call(
                service,
                'POST',
                `/v1/subscriptions/${created.body.id}/secret/rotate`,
              );
              expect(rotated.status).toBe(200);
              for (const old of held) {
                if (old.until === undefined || old.until > at + graceMs) old.until = at + graceMs;
              }
              held.unshift({ secret: rotated.body.secret, until: undefined });
            } else {
              const request = await deliverOne(service, sent);
              const at = clock.now();
              const signing = held
                .filter((h) => h.until === undefined || at < h.until)
                .map((h) => h.secret);
              const id = request.headers['webhook-id']!;
              const timestamp = Number(request.headers['webhook-timestamp']);
              expect(timestamp).toBe(Math.floor(at / 1000));
              expect(request.headers['webhook-signature'], `at ${at}`).toBe(
                signWebhook({ id, timestamp, body: request.body }, signing)['webhook-signature'],
              );
            }
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it('reads a lone secret once per version of the subscription, and again after a rotation or any other change', async () => {
    const { repository, reads } = countingSecretReads();
    const { service, sent } = setup({ repository, secretGracePeriodMs: 0 });
    const created = await call(service, 'POST', '/v1/subscriptions', { body: subscriptionBody() });
    const deliver = () => deliverOne(service, sent);
    await deliver();
    await deliver();
    await deliver();
    expect(reads.count).toBe(1);
    const path = `/v1/subscriptions/${created.body.id}`;
    expect((await call(service, 'POST', `${path}/secret/rotate`)).status).toBe(200);
    await deliver();
    await deliver();
    expect(reads.count).toBe(2);
    expect(
      (await call(service, 'PATCH', path, { body: { events: ['reservation/*', 'folio/*'] } }))
        .status,
    ).toBe(200);
    await deliver();
    expect(reads.count).toBe(3);
  });

  it('while a grace lasts (two secrets sign), reads them at each attempt', async () => {
    const { repository, reads } = countingSecretReads();
    const { service, sent, clock } = setup({ repository, secretGracePeriodMs: 10_000 });
    const created = await call(service, 'POST', '/v1/subscriptions', { body: subscriptionBody() });
    await call(service, 'POST', `/v1/subscriptions/${created.body.id}/secret/rotate`);
    for (let i = 0; i < 3; i++) {
      const request = await deliverOne(service, sent);
      expect(request.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    }
    expect(reads.count).toBe(3);
    clock.advance(10_000);
    for (let i = 0; i < 3; i++) {
      const request = await deliverOne(service, sent);
      expect(request.headers['webhook-signature']!.split(' ')).toHaveLength(1);
    }
    // The grace has ended: the new secret alone signs, read once more, then kept.
    expect(reads.count).toBe(4);
  });
});
