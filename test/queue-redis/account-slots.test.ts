/**
 * One account's share of a Redis queue's workers, and the jobs that wait in the process for one:
 * checked against a model written from the rules (docs/delivery.md, "On Redis"), on fake timers.
 */
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AccountSlots, waitingRoom } from '../../src/queue-redis/account-slots.js';

type Op =
  | { kind: 'take'; account: string }
  | { kind: 'wait'; account: string }
  | { kind: 'give'; account: string }
  | { kind: 'advance'; ms: number }
  | { kind: 'end' };

const accounts = ['a', 'b', ''];
// The queue closing ends the waits for good: rare, so that most runs wait throughout.
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    arbitrary: fc.record({
      kind: fc.constant('take' as const),
      account: fc.constantFrom(...accounts),
    }),
    weight: 10,
  },
  {
    arbitrary: fc.record({
      kind: fc.constant('wait' as const),
      account: fc.constantFrom('a', 'b'),
    }),
    weight: 10,
  },
  {
    arbitrary: fc.record({
      kind: fc.constant('give' as const),
      account: fc.constantFrom(...accounts),
    }),
    weight: 10,
  },
  {
    arbitrary: fc.record({
      kind: fc.constant('advance' as const),
      ms: fc.integer({ min: 0, max: 80 }),
    }),
    weight: 10,
  },
  { arbitrary: fc.constant({ kind: 'end' as const }), weight: 1 },
);

/** A wait as the rules say it ends: handed a worker (true) or not (false), once. */
interface ModelWait {
  readonly id: number;
  readonly account: string;
  readonly deadline: number;
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('AccountSlots', () => {
  it('runs at most the share of an account at once, lets at most the room wait, hands a freed worker to the first waiting, and ends a wait after its time', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 0, max: 3 }),
        fc.integer({ min: 0, max: 50 }),
        fc.array(op, { maxLength: 60 }),
        async (share, room, waitMs, ops) => {
          vi.clearAllTimers();
          const slots = new AccountSlots(share, room, waitMs);
          // The model: attempts running by account (what the caller holds), the jobs waiting in
          // order, and how each wait ended.
          const running = new Map<string, number>();
          let waiting: ModelWait[] = [];
          const expected = new Map<number, boolean>();
          const ended = new Map<number, boolean>();
          let now = 0;
          let next = 0;
          let closing = false;
          const endWait = (wait: ModelWait, handed: boolean) => {
            expected.set(wait.id, handed);
            waiting = waiting.filter((w) => w !== wait);
          };
          for (const step of ops) {
            switch (step.kind) {
              case 'take': {
                const held = running.get(step.account) ?? 0;
                // Jobs of no account are not held to a share.
                const free = step.account === '' || held < share;
                expect(slots.take(step.account)).toBe(free);
                if (free && step.account !== '') running.set(step.account, held + 1);
                break;
              }
              case 'wait': {
                const held = running.get(step.account) ?? 0;
                const mine = waiting.filter((w) => w.account === step.account).length;
                const promise = slots.wait(step.account);
                // Only an account that holds workers has a worker to wait for; at most `room` wait;
                // none once the waits were ended (the queue closing).
                if (closing || held === 0 || waitMs <= 0 || mine >= room) {
                  expect(promise).toBeUndefined();
                  break;
                }
                expect(promise).toBeInstanceOf(Promise);
                const wait = { id: next++, account: step.account, deadline: now + waitMs };
                waiting.push(wait);
                promise!.then((handed) => {
                  // Each wait ends once.
                  expect(ended.has(wait.id)).toBe(false);
                  ended.set(wait.id, handed);
                });
                break;
              }
              case 'give': {
                const held = running.get(step.account) ?? 0;
                if (step.account !== '' && held === 0) break; // only a holder gives back
                slots.give(step.account);
                if (step.account === '') break;
                const first = waiting.find((w) => w.account === step.account);
                // The worker goes to the first job of the account waiting, else it is free.
                if (first !== undefined) endWait(first, true);
                else running.set(step.account, held - 1);
                break;
              }
              case 'advance': {
                now += step.ms;
                for (const wait of [...waiting]) if (wait.deadline <= now) endWait(wait, false);
                await vi.advanceTimersByTimeAsync(step.ms);
                break;
              }
              case 'end':
                for (const wait of [...waiting]) endWait(wait, false);
                slots.endWaits();
                closing = true;
                break;
            }
            await Promise.resolve();
            for (const [account, held] of running) {
              expect(held).toBeLessThanOrEqual(share);
              expect(waiting.filter((w) => w.account === account).length).toBeLessThanOrEqual(room);
            }
            expect(ended).toEqual(expected);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('gives an account at most half the workers, running and waiting, or its share where that is more', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1_000 }),
        fc.integer({ min: 1, max: 1_000 }),
        (a, b) => {
          const concurrency = Math.max(a, b);
          const share = Math.min(a, b);
          const room = waitingRoom(share, concurrency);
          expect(room).toBeGreaterThanOrEqual(0);
          expect(room).toBeLessThanOrEqual(share);
          expect(share + room).toBeLessThanOrEqual(Math.max(share, Math.floor(concurrency / 2)));
          // As many as the share wherever that keeps the account to half.
          if (2 * share <= Math.floor(concurrency / 2)) expect(room).toBe(share);
        },
      ),
    );
    expect(waitingRoom(4, 16)).toBe(4);
    expect(waitingRoom(2, 8)).toBe(2);
    expect(waitingRoom(1, 2)).toBe(0);
    expect(waitingRoom(1, 4)).toBe(1);
  });
});
