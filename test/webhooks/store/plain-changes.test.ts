/**
 * Pages of changes a repository made of frozen plain data: marked pages are frozen, only the
 * marked array itself counts, and the index still checks what such a page holds.
 */
import { describe, expect, it } from 'vitest';
import { SubscriptionIndex } from '../../../src/index.js';
import { isPlainChanges, markPlainChanges } from '../../../src/webhooks/store/plain-changes.js';
import type { SubscriptionRepository } from '../../../src/webhooks/store/repository.js';
import { SubscriptionMirror } from '../../../src/webhooks/store/subscription-mirror.js';
import type {
  StoredSubscription,
  SubscriptionChange,
} from '../../../src/webhooks/subscriptions/subscription.js';

function change(revision: number, id: string, events: string[]): SubscriptionChange {
  const subscription: StoredSubscription = Object.freeze({
    id,
    accountCode: 'ACME',
    endpointUrl: 'https://hooks.example.com/in',
    events: Object.freeze(events),
    signatureType: 'hmac-sha256',
    createdAt: '2026-01-01T00:00:00.000Z',
    status: 'enabled',
    updatedAt: '2026-01-01T00:00:00.000Z',
    revision,
  });
  return Object.freeze({ revision, id, accountCode: 'ACME', subscription });
}

// A repository that answers one marked page, then nothing.
function onePage(changes: SubscriptionChange[]): SubscriptionRepository {
  return {
    changesSince: async (revision: number) => markPlainChanges(revision === 0 ? changes : []),
  } as unknown as SubscriptionRepository;
}

describe('plain pages of changes', () => {
  it('are frozen once marked, and only the marked array counts', () => {
    const page = [change(1, 's1', ['folio/created'])];
    expect(isPlainChanges(page)).toBe(false);
    const marked = markPlainChanges(page);
    expect(isPlainChanges(marked)).toBe(true);
    expect(Object.isFrozen(marked)).toBe(true);
    expect(() => (page as SubscriptionChange[]).push(change(2, 's2', ['folio/created']))).toThrow(
      TypeError,
    );
    expect(isPlainChanges([...marked])).toBe(false);
  });

  it('still have their patterns checked by the index: a malformed one is refused, later ones held', async () => {
    const index = new SubscriptionIndex();
    const errors: unknown[] = [];
    const mirror = new SubscriptionMirror(
      onePage([
        change(1, 's1', ['folio/created']),
        change(2, 's2', ['not a pattern']),
        change(3, 's3', ['reservation/*', 'reservation/created']),
      ]),
      index,
      (error) => errors.push(error),
    );
    await mirror.catchUp();
    expect(mirror.revision).toBe(3);
    expect(index.get('s2')).toBeUndefined();
    expect(errors).toEqual([expect.objectContaining({ code: 'invalid_subscription' })]);
    const matched = index.match({ accountCode: 'ACME', kind: 'reservation/created' });
    expect(matched.map((s) => s.id)).toEqual(['s3']);
    expect(index.match({ accountCode: 'ACME', kind: 'folio/created' }).map((s) => s.id)).toEqual([
      's1',
    ]);
  });
});
