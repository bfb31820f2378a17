/**
 * A property of the webhook service's signing keys on a fake clock: for any sequence of rotations,
 * changes of signature type (HMAC-SHA256 and ed25519) and PATCHes to the same type, each delivery's
 * `webhook-signature` verifies with the secret or public key answered last, with every earlier one
 * whose grace has not ended (both sign through a rotation's grace), and with none whose grace has
 * ended. The model is the requirement's text: a rotation or a change of type answers a new key of
 * the type; every earlier key signs on until the rotation's time plus the grace, or its own earlier
 * end; a PATCH to the same type answers none; a read shows the public key answered last.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type SignatureType, verifyWebhook } from '../../../src/index.js';
import { call, closingSetup, subscriptionBody, until } from '../../support/webhook-service.js';

const setup = closingSetup();

type Step =
  | { readonly kind: 'rotate' }
  | { readonly kind: 'switch' }
  | { readonly kind: 'same' }
  | { readonly kind: 'advance'; readonly ms: number }
  | { readonly kind: 'publish' };

/** A key the model holds: a `whsec_` secret or a `whpk_` public key, and when it stops signing. */
interface ModelKey {
  readonly key: string;
  until: number | undefined;
}

const other = (type: SignatureType): SignatureType =>
  type === 'ed25519' ? 'hmac-sha256' : 'ed25519';

/** The key a create, rotation or change of type answered: the secret, or the public key. */
const answered = (body: { secret?: string; publicKey?: string }): string => {
  const key = body.secret ?? body.publicKey;
  if (key === undefined) throw new Error('no key answered');
  return key;
};

describe('signing keys across rotations and changes of type', () => {
  it('every delivery verifies with the key answered last and each key in its grace, never with one past its grace', async () => {
    const step: fc.Arbitrary<Step> = fc.oneof(
      fc.constant({ kind: 'rotate' } as const),
      fc.constant({ kind: 'switch' } as const),
      fc.constant({ kind: 'same' } as const),
      fc.integer({ min: 0, max: 3_000 }).map((ms) => ({ kind: 'advance', ms }) as const),
      fc.constant({ kind: 'publish' } as const),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom<SignatureType>('hmac-sha256', 'ed25519'),
        fc.integer({ min: 0, max: 2_000 }),
        fc.array(step, { maxLength: 12 }),
        async (first, graceMs, steps) => {
          // Arrange
          const { service, sent, clock } = setup({ secretGracePeriodMs: graceMs });
          const created = await call(service, 'POST', '/v1/subscriptions', {
            body: subscriptionBody({ signatureType: first }),
          });
          expect(created.status).toBe(201);
          const path = `/v1/subscriptions/${created.body.id}`;
          let type = first;
          const keys: ModelKey[] = [{ key: answered(created.body), until: undefined }];
          const rotatedTo = (body: { secret?: string; publicKey?: string }) => {
            const end = clock.now() + graceMs;
            for (const held of keys)
              if (held.until === undefined || held.until > end) held.until = end;
            keys.unshift({ key: answered(body), until: undefined });
          };
          const check = async () => {
            const { id } = await service.publish({
              accountCode: 'ACME',
              kind: 'reservation/created',
            });
            await until(() => sent.some((request) => request.headers['webhook-id'] === id));
            const delivery = sent.find((request) => request.headers['webhook-id'] === id);
            if (delivery === undefined) throw new Error('no delivery');
            const now = clock.now();
            const verifies = (key: string) =>
              verifyWebhook(
                delivery.body,
                delivery.headers,
                key.startsWith('whpk_') ? { publicKeys: [key], clock } : { secrets: [key], clock },
              ).ok;
            // Assert
            expect(verifies(keys[0]!.key), 'the key answered last').toBe(true);
            const live = keys.filter((held) => held.until === undefined || held.until > now);
            for (const held of keys) {
              expect(verifies(held.key), `${held.key} until ${held.until} at ${now}`).toBe(
                live.includes(held),
              );
            }
            expect(delivery.headers['webhook-signature']!.split(' ')).toHaveLength(live.length);
          };
          // Act
          for (const next of steps) {
            if (next.kind === 'advance') clock.advance(next.ms);
            else if (next.kind === 'publish') await check();
            else if (next.kind === 'rotate') {
              const rotated = await call(service, 'POST', `${path}/secret/rotate`);
              expect(rotated.status).toBe(200);
              rotatedTo(rotated.body);
            } else if (next.kind === 'switch') {
              type = other(type);
              const patched = await call(service, 'PATCH', path, { body: { signatureType: type } });
              expect(patched.body.signatureType).toBe(type);
              rotatedTo(patched.body);
            } else {
              const patched = await call(service, 'PATCH', path, { body: { signatureType: type } });
              expect(patched.body).not.toHaveProperty('previousSecretsExpireAt');
              expect(patched.body).not.toHaveProperty('secret');
            }
          }
          await check();
          const read = await call(service, 'GET', path);
          expect(read.body.signatureType).toBe(type);
          expect(read.body.publicKey).toBe(type === 'ed25519' ? keys[0]!.key : undefined);
        },
      ),
      { numRuns: 40 },
    );
  });
});
