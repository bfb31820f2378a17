/**
 * The index kept in step with a repository, over more changes than one read returns: pages read
 * ahead are applied in order, each change once, and a failing read leaves the index where it was.
 */
import { describe, expect, it } from 'vitest';
import { MemorySubscriptionRepository, SubscriptionIndex } from '../../../src/index.js';
import { SubscriptionMirror } from '../../../src/webhooks/store/subscription-mirror.js';
import { repositoryWith } from '../../support/webhook-service.js';

const T0 = Date.UTC(2026, 0, 1);
// Above two reads of changesSince (10,000 each): three pages, the last one short.
const COUNT = 23_456;

async function filled(): Promise<MemorySubscriptionRepository> {
  const repository = new MemorySubscriptionRepository();
  for (let i = 0; i < COUNT; i++) {
    await repository.create(
      {
        id: `s${i}`,
        accountCode: `A${i % 50}`,
        endpointUrl: 'https://hooks.example.com/in',
        events: [i % 2 === 0 ? 'reservation/*' : 'folio/created'],
        ...(i % 3 === 0 ? { propertyIds: [`P${i % 7}`] } : {}),
        createdAt: new Date(T0).toISOString(),
      },
      'whsec_x',
      { at: T0, maxPerAccount: COUNT },
    );
  }
  return repository;
}

describe('SubscriptionMirror over many pages', () => {
  it('applies every change once, in order, and the index matches as a linear scan of the repository', async () => {
    const repository = await filled();
    // Later changes: some deleted, some disabled, so that pages hold removals too.
    for (let i = 0; i < COUNT; i += 97) await repository.delete(`A${i % 50}`, `s${i}`, T0);
    for (let i = 1; i < COUNT; i += 89) {
      await repository.update(`A${i % 50}`, `s${i}`, { status: 'disabled' }, T0);
    }
    const asked: number[] = [];
    const counting = repositoryWith(repository, {
      changesSince: (revision: number, limit: number) => {
        asked.push(revision);
        return repository.changesSince(revision, limit);
      },
    });
    const index = new SubscriptionIndex();
    const errors: unknown[] = [];
    const mirror = new SubscriptionMirror(counting, index, (e) => errors.push(e));
    await mirror.catchUp();
    const all = await repository.changesSince(0, Number.MAX_SAFE_INTEGER);
    const enabled = all.filter((c) => c.subscription?.status === 'enabled');
    expect(errors).toEqual([]);
    expect(index.size).toBe(enabled.length);
    expect(mirror.revision).toBe(all.at(-1)!.revision);
    // Each page is asked for once, after the one before it, from the last revision it held.
    expect(asked).toEqual([...asked].sort((a, b) => a - b));
    expect(new Set(asked).size).toBe(asked.length);
    for (const account of ['A0', 'A7', 'A49']) {
      for (const propertyId of [undefined, 'P0', 'P3']) {
        const event = { accountCode: account, kind: 'reservation/created', propertyId };
        const expected = enabled
          .map((c) => c.subscription!)
          .filter(
            (s) =>
              s.accountCode === account &&
              s.events.includes('reservation/*') &&
              (s.propertyIds === undefined ||
                (propertyId !== undefined && s.propertyIds.includes(propertyId))),
          )
          .map((s) => s.id)
          .sort();
        expect(
          index
            .match(event)
            .map((s) => s.id)
            .sort(),
        ).toEqual(expected);
      }
    }
  });

  it('a read that fails on a later page rejects the pass, keeps what was applied, and the next pass goes on from there', async () => {
    const repository = await filled();
    let calls = 0;
    const failing = repositoryWith(repository, {
      changesSince: (revision: number, limit: number) => {
        calls += 1;
        return calls === 2
          ? Promise.reject(new Error('connection lost'))
          : repository.changesSince(revision, limit);
      },
    });
    const index = new SubscriptionIndex();
    const mirror = new SubscriptionMirror(failing, index, () => undefined);
    await expect(mirror.catchUp()).rejects.toThrow('connection lost');
    expect(index.size).toBe(10_000);
    await mirror.catchUp();
    expect(index.size).toBe(COUNT);
    expect(mirror.revision).toBe(COUNT);
  });
});

describe("SubscriptionMirror and this instance's own writes", () => {
  const subscription = (id: string, accountCode = 'A') => ({
    id,
    accountCode,
    endpointUrl: 'https://hooks.example.com/in',
    events: ['reservation/*'],
    createdAt: new Date(T0).toISOString(),
  });

  it('applies its own write at once when it is the next revision, reading nothing; else catches up', async () => {
    const repository = new MemorySubscriptionRepository();
    let reads = 0;
    const counting = repositoryWith(repository, {
      changesSince: (revision: number, limit: number) => {
        reads += 1;
        return repository.changesSince(revision, limit);
      },
    });
    const index = new SubscriptionIndex();
    const mirror = new SubscriptionMirror(counting, index, () => undefined);
    await mirror.catchUp();
    const first = reads;
    const a = await repository.create(subscription('a'), 'whsec_a', { at: T0, maxPerAccount: 9 });
    await mirror.settle(a);
    expect(reads).toBe(first);
    expect(index.get('a')?.endpointUrl).toBe('https://hooks.example.com/in');
    expect(mirror.revision).toBe(a!.revision);
    const changed = await repository.update(
      'A',
      'a',
      { endpointUrl: 'https://hooks.example.com/other' },
      T0,
    );
    await mirror.settle(changed);
    expect(reads).toBe(first);
    expect(index.get('a')?.endpointUrl).toBe('https://hooks.example.com/other');
    // Another writer's change came in between: not the next revision, so a catch-up reads both.
    await repository.create(subscription('b'), 'whsec_b', { at: T0, maxPerAccount: 9 });
    const c = await repository.create(subscription('c'), 'whsec_c', { at: T0, maxPerAccount: 9 });
    await mirror.settle(c);
    expect(reads).toBe(first + 1);
    expect([index.get('b')?.id, index.get('c')?.id]).toEqual(['b', 'c']);
    // A disabled subscription answered by its write leaves the index.
    const disabled = await repository.update('A', 'c', { status: 'disabled' }, T0);
    await mirror.settle(disabled);
    expect(index.get('c')).toBeUndefined();
    expect(reads).toBe(first + 1);
    // No subscription answered (a delete): a catch-up.
    await repository.delete('A', 'b', T0);
    await mirror.settle(undefined);
    expect(index.get('b')).toBeUndefined();
    expect(reads).toBe(first + 2);
  });

  it('while a catch-up is under way, its own write waits for one after it', async () => {
    const repository = new MemorySubscriptionRepository();
    let release: (() => void) | undefined;
    const gated = repositoryWith(repository, {
      changesSince: async (revision: number, limit: number) => {
        await new Promise<void>((resolve) => {
          release = resolve;
        });
        return repository.changesSince(revision, limit);
      },
    });
    const index = new SubscriptionIndex();
    const mirror = new SubscriptionMirror(gated, index, () => undefined);
    const running = mirror.catchUp();
    const a = await repository.create(subscription('a'), 'whsec_a', { at: T0, maxPerAccount: 9 });
    const settled = mirror.settle(a);
    release?.();
    await running;
    // The pass under way may have read before the write: the write is applied by the next one.
    await new Promise((resolve) => setImmediate(resolve));
    release?.();
    await settled;
    expect(index.get('a')?.id).toBe('a');
    expect(mirror.revision).toBe(a!.revision);
  });
});
