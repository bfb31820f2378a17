/**
 * memorySeenStore against a model on a fake clock: a claim holds for its time, a handled mark for
 * its own, a release gives back a claim and never a mark; and it holds at most maxIds ids.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock, isConfigurationError, memorySeenStore } from '../../../src/index.js';
import { thrown } from '../../support/thrown.js';

type Step =
  | { readonly op: 'claim'; readonly id: string; readonly ms: number }
  | { readonly op: 'complete'; readonly id: string; readonly ms: number }
  | { readonly op: 'release'; readonly id: string }
  | { readonly op: 'wait'; readonly ms: number };

const ids = fc.constantFrom('a', 'b', 'c', 'd');
const steps = fc.array(
  fc.oneof(
    fc.record({
      op: fc.constant('claim' as const),
      id: ids,
      ms: fc.integer({ min: 1, max: 5000 }),
    }),
    fc.record({
      op: fc.constant('complete' as const),
      id: ids,
      ms: fc.integer({ min: 1, max: 5000 }),
    }),
    fc.record({ op: fc.constant('release' as const), id: ids }),
    fc.record({ op: fc.constant('wait' as const), ms: fc.integer({ min: 0, max: 3000 }) }),
  ),
  { maxLength: 80 },
);

describe('memorySeenStore', () => {
  it('answers every claim as the model: what holds the id until its end, else claimed', () => {
    fc.assert(
      fc.property(steps, (script) => {
        // Arrange
        const clock = new FakeClock(1_000_000);
        const store = memorySeenStore({ clock });
        // The model, from the contract's sentences: an entry holds its id until `until`.
        const model = new Map<string, { handled: boolean; until: number }>();
        for (const step of script as Step[]) {
          const now = clock.now();
          if (step.op === 'wait') {
            clock.advance(step.ms);
          } else if (step.op === 'claim') {
            // Act
            const got = store.claim(step.id, step.ms);
            // Assert
            const held = model.get(step.id);
            const expected =
              held !== undefined && held.until > now
                ? held.handled
                  ? 'handled'
                  : 'pending'
                : 'claimed';
            expect(got).toBe(expected);
            if (expected === 'claimed')
              model.set(step.id, { handled: false, until: now + step.ms });
          } else if (step.op === 'complete') {
            store.complete(step.id, step.ms);
            model.set(step.id, { handled: true, until: now + step.ms });
          } else {
            store.release(step.id);
            if (model.get(step.id)?.handled === false) model.delete(step.id);
          }
        }
      }),
      { numRuns: 300 },
    );
  });

  it('holds at most maxIds ids: the oldest is forgotten first', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 1, max: 100 }), (max, n) => {
        const store = memorySeenStore({ maxIds: max, clock: new FakeClock(0) });
        for (let i = 0; i < n; i++) {
          store.claim(`id${i}`, 60_000);
          store.complete(`id${i}`, 60_000);
        }
        // The newest min(n, max) are remembered (a claim finding one adds nothing), every older
        // one is not.
        for (let i = Math.max(0, n - max); i < n; i++) {
          expect(store.claim(`id${i}`, 1)).toBe('handled');
        }
        for (let i = 0; i < n - max; i++) {
          expect(store.claim(`id${i}`, 1)).toBe('claimed');
        }
      }),
    );
  });

  it('refuses a bad maxIds or clock', () => {
    for (const options of [{ maxIds: 0 }, { maxIds: 1.5 }, { clock: {} }]) {
      const error = thrown(() => memorySeenStore(options as never));
      expect(isConfigurationError(error) && error.code).toBe('invalid_option');
    }
  });
});
