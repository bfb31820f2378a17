/**
 * Group commit, against what it promises its callers: each write settles once, with its own result
 * when its batch committed and with the batch's error when it failed (a failed batch fails its own
 * writes only, and the next goes as if nothing happened); a batch holds at most `maxBatch` writes,
 * never two of one key, and no more than `concurrency` are in flight; a write made while nothing is
 * in flight goes at the end of the turn, without waiting for a timer, with the other writes of that
 * turn; writes of one key are written in the order they were made. The statements are held open by the test, and timers fire only when it says.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GroupCommit } from '../../src/internal/group-commit.js';

/** A batch handed to `write`, held open until the test settles it. */
interface Written {
  readonly items: readonly Item[];
  readonly settle: (fail: boolean) => void;
}

interface Item {
  readonly n: number;
  readonly key: string;
}

/** The harness: a group commit whose writes and waits the test settles by hand. */
function harness(options: {
  maxBatch: number;
  maxWaitMs: number;
  concurrency: number;
  minBatch?: number | undefined;
}) {
  const written: Written[] = [];
  const open: Written[] = [];
  const timers: Array<() => void> = [];
  const group = new GroupCommit<Item, string>({
    ...options,
    keyOf: (item) => item.key,
    sleep: () => new Promise<void>((resolve) => timers.push(resolve)),
    write: (items) =>
      new Promise((resolve, reject) => {
        const batch: Written = {
          items,
          settle: (fail) =>
            fail ? reject(new Error('batch failed')) : resolve(items.map((i) => `done ${i.n}`)),
        };
        written.push(batch);
        open.push(batch);
      }),
  });
  return { group, written, open, timers };
}

/** Let every promise callback that is ready run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Note the batches written since the last look (`seen` of them before): whether another was in
 * flight beside them, and how many writes were waiting when they went (those made, less those
 * written before them). Batches written in one turn are told apart by their order: the first of a
 * turn with nothing else open went alone.
 */
function noteBatches(
  written: readonly Written[],
  open: readonly Written[],
  seen: number,
  made: number,
  notes: Array<{ beside: boolean; waiting: number }>,
): number {
  for (let i = seen; i < written.length; i++) {
    const before = written.slice(0, i).reduce((sum, b) => sum + b.items.length, 0);
    const stillOpenBefore = open.filter((b) => written.indexOf(b) < i).length;
    notes.push({ beside: stillOpenBefore > 0, waiting: made - before });
  }
  return written.length;
}

type Step =
  | { readonly op: 'add'; readonly key: number }
  | { readonly op: 'end'; readonly which: number; readonly fail: boolean }
  | { readonly op: 'timers' };

const steps: fc.Arbitrary<Step[]> = fc.array(
  fc.oneof(
    { weight: 4, arbitrary: fc.record({ op: fc.constant('add' as const), key: fc.nat(3) }) },
    {
      weight: 3,
      arbitrary: fc.record({
        op: fc.constant('end' as const),
        which: fc.nat(),
        fail: fc.boolean(),
      }),
    },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('timers' as const) }) },
  ),
  { maxLength: 60 },
);

/**
 * Each turn's writes added together, the turns one after the other with the group settled between
 * them: each write made by `itemOf` from its number and its turn's value, with its outcome.
 */
async function addTurns<T, I>(
  group: GroupCommit<I, number>,
  turns: readonly (readonly T[])[],
  itemOf: (n: number, value: T) => I,
): Promise<Array<I & { readonly outcome: Promise<unknown> }>> {
  let n = 0;
  const calls: Array<I & { readonly outcome: Promise<unknown> }> = [];
  for (const turn of turns) {
    for (const value of turn) {
      const item = itemOf(n++, value);
      const outcome = group.add(item).then(
        (result) => ({ value: result }),
        (error: unknown) => ({ error }),
      );
      calls.push({ ...item, outcome });
    }
    await settle();
  }
  return calls;
}

describe('GroupCommit', () => {
  it('settles each write once, with its own result or its own batch’s error, within the bounds', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 0, max: 2 }),
        fc.integer({ min: 1, max: 3 }),
        fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
        steps,
        async (maxBatch, maxWaitMs, concurrency, minBatch, script) => {
          const { group, written, open, timers } = harness({
            maxBatch,
            maxWaitMs,
            concurrency,
            minBatch,
          });
          // For each batch: whether another was in flight when it went, and how many waited.
          const wentBeside: Array<{ beside: boolean; waiting: number }> = [];
          let seen = 0;
          const outcomes = new Map<number, { result?: string; error?: unknown; count: number }>();
          const failedItems = new Set<number>();
          let made = 0;
          const add = async (key: number) => {
            const n = made++;
            const inFlightBefore = open.length;
            const writtenBefore = written.length;
            const waiting = n - written.reduce((sum, b) => sum + b.items.length, 0);
            const outcome = { count: 0 } as { result?: string; error?: unknown; count: number };
            outcomes.set(n, outcome);
            group.add({ n, key: `k${key}` }).then(
              (result) => {
                outcome.count += 1;
                outcome.result = result;
              },
              (error: unknown) => {
                outcome.count += 1;
                outcome.error = error;
              },
            );
            // Nothing in flight and nothing waiting: it goes at the end of the turn, no timer needed.
            if (inFlightBefore === 0 && waiting === 0) {
              await settle();
              expect(written.length, `write ${n} alone goes at the turn's end`).toBe(
                writtenBefore + 1,
              );
              expect(written.at(-1)?.items.map((i) => i.n)).toEqual([n]);
            }
          };
          for (const step of script) {
            if (step.op === 'add') await add(step.key);
            else if (step.op === 'timers') {
              for (const fire of timers.splice(0)) fire();
            } else if (open.length > 0) {
              const [batch] = open.splice(step.which % open.length, 1);
              if (step.fail) for (const item of batch!.items) failedItems.add(item.n);
              batch!.settle(step.fail);
            }
            await settle();
            expect(open.length, 'batches in flight').toBeLessThanOrEqual(concurrency);
            seen = noteBatches(written, open, seen, made, wentBeside);
          }
          // Drain: end every batch, fire every timer, until all is written.
          for (let guard = 0; guard < 10_000; guard++) {
            await settle();
            seen = noteBatches(written, open, seen, made, wentBeside);
            if (open.length > 0) open.shift()!.settle(false);
            else if (timers.length > 0) for (const fire of timers.splice(0)) fire();
            else if ([...outcomes.values()].every((o) => o.count > 0)) break;
            expect(open.length).toBeLessThanOrEqual(concurrency);
          }
          // With a minBatch and no timer, a batch went beside another only with that many waiting
          // (or a full batch's worth).
          if (minBatch !== undefined && maxWaitMs === 0) {
            for (const { beside, waiting } of wentBeside) {
              if (beside) expect(waiting).toBeGreaterThanOrEqual(Math.min(minBatch, maxBatch));
            }
          }
          await settle();
          // Each write was written exactly once, in a batch within the bounds.
          const all = written.flatMap((b) => b.items.map((i) => i.n)).sort((a, b) => a - b);
          expect(all).toEqual(Array.from({ length: made }, (_, i) => i));
          for (const batch of written) {
            expect(batch.items.length).toBeGreaterThan(0);
            expect(batch.items.length).toBeLessThanOrEqual(maxBatch);
            const keys = batch.items.map((i) => i.key);
            expect(new Set(keys).size, 'no key twice in a batch').toBe(keys.length);
          }
          // Writes of one key went in the order they were made.
          const order = written.flatMap((b) => b.items);
          for (const key of ['k0', 'k1', 'k2', 'k3']) {
            const ns = order.filter((i) => i.key === key).map((i) => i.n);
            expect(ns).toEqual([...ns].sort((a, b) => a - b));
          }
          // Each settled once: its own result, or the error of its own batch.
          for (const [n, outcome] of outcomes) {
            expect(outcome.count, `write ${n} settles once`).toBe(1);
            if (failedItems.has(n)) {
              expect((outcome.error as Error).message).toBe('batch failed');
            } else {
              expect(outcome.result).toBe(`done ${n}`);
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('with retryAlone, a write the statement refuses fails its own caller only: the others of its batch go alone and succeed', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 6 }),
        fc.array(fc.array(fc.boolean(), { minLength: 1, maxLength: 8 }), { maxLength: 6 }),
        async (maxBatch, turns) => {
          const batches: number[][] = [];
          const group = new GroupCommit<{ n: number; poisoned: boolean }, number>({
            maxBatch,
            maxWaitMs: 0,
            concurrency: 1,
            retryAlone: true,
            write: async (items) => {
              batches.push(items.map((i) => i.n));
              if (items.some((i) => i.poisoned)) throw new Error('refused');
              return items.map((i) => i.n * 10);
            },
          });
          const calls = await addTurns(group, turns, (n, poisoned) => ({ n, poisoned }));
          for (const call of calls) {
            const outcome = await call.outcome;
            expect(outcome, `write ${call.n}`).toEqual(
              call.poisoned ? { error: new Error('refused') } : { value: call.n * 10 },
            );
          }
          for (const batch of batches) expect(batch.length).toBeLessThanOrEqual(maxBatch);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('with retryAlone a test of the error, only a batch whose error passes it goes again alone; another fails each of its writes with its error', async () => {
    type Fault = 'none' | 'refused' | 'lost';
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 6 }),
        fc.array(
          fc.array(fc.constantFrom<Fault>('none', 'none', 'refused', 'lost'), {
            minLength: 1,
            maxLength: 8,
          }),
          { maxLength: 6 },
        ),
        async (maxBatch, turns) => {
          const batches: Array<Array<{ n: number; fault: Fault }>> = [];
          const group = new GroupCommit<{ n: number; fault: Fault }, number>({
            maxBatch,
            maxWaitMs: 0,
            concurrency: 1,
            retryAlone: (error) => (error as Error).message === 'refused',
            write: async (items) => {
              batches.push([...items]);
              // A lost write fails its batch whatever else is in it.
              if (items.some((i) => i.fault === 'lost')) throw new Error('lost');
              if (items.some((i) => i.fault === 'refused')) throw new Error('refused');
              return items.map((i) => i.n * 10);
            },
          });
          const calls = await addTurns(group, turns, (n, fault) => ({ n, fault }));
          for (const call of calls) {
            // Its first batch: lost, it fails every write of it; refused, each again alone.
            const first = batches.find((b) => b.some((i) => i.n === call.n)) ?? [];
            const expected = first.some((i) => i.fault === 'lost')
              ? { error: new Error('lost') }
              : call.fault === 'refused'
                ? { error: new Error('refused') }
                : { value: call.n * 10 };
            expect(await call.outcome, `write ${call.n}`).toEqual(expected);
            // Written alone after a refused batch of more, never after a lost one.
            const writes = batches.filter((b) => b.some((i) => i.n === call.n)).length;
            const again =
              first.length > 1 &&
              !first.some((i) => i.fault === 'lost') &&
              first.some((i) => i.fault === 'refused');
            expect(writes, `writes of ${call.n}`).toBe(again ? 2 : 1);
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('a retryAlone test that throws counts as no: the batch fails each of its writes with its error', async () => {
    const group = new GroupCommit<number, number>({
      maxBatch: 10,
      maxWaitMs: 0,
      concurrency: 1,
      retryAlone: () => {
        throw new Error('the test failed');
      },
      write: async () => {
        throw new Error('refused');
      },
    });
    const outcomes = [1, 2].map((n) => group.add(n).catch((error: unknown) => error));
    expect(await Promise.all(outcomes)).toEqual([new Error('refused'), new Error('refused')]);
  });

  it('writes made in one turn go together at its end; those made while it is in flight, in the next', async () => {
    const { group, written, open } = harness({ maxBatch: 10, maxWaitMs: 0, concurrency: 1 });
    const first = [1, 2].map((n) => group.add({ n, key: `k${n}` }));
    expect(written).toHaveLength(0);
    await settle();
    expect(written.map((b) => b.items.map((i) => i.n))).toEqual([[1, 2]]);
    const next = [3, 4, 5].map((n) => group.add({ n, key: `k${n}` }));
    await settle();
    expect(written).toHaveLength(1);
    open.shift()!.settle(false);
    await settle();
    await settle();
    expect(written.map((b) => b.items.map((i) => i.n))).toEqual([
      [1, 2],
      [3, 4, 5],
    ]);
    open.shift()!.settle(false);
    expect(await Promise.all([...first, ...next])).toEqual([
      'done 1',
      'done 2',
      'done 3',
      'done 4',
      'done 5',
    ]);
    expect(group.stats).toEqual({ batches: 2, items: 5 });
  });

  it('a batch forming while another is in flight waits for the timer, or goes once full', async () => {
    const { group, written, timers } = harness({ maxBatch: 3, maxWaitMs: 2, concurrency: 2 });
    void group.add({ n: 1, key: 'a' });
    await settle();
    expect(written.map((b) => b.items.map((i) => i.n))).toEqual([[1]]);
    void group.add({ n: 2, key: 'b' });
    await settle();
    expect(written).toHaveLength(1);
    expect(timers).toHaveLength(1);
    void group.add({ n: 3, key: 'c' });
    void group.add({ n: 4, key: 'd' });
    await settle();
    expect(written.map((b) => b.items.map((i) => i.n))).toEqual([[1], [2, 3, 4]]);
    void group.add({ n: 5, key: 'e' });
    timers.shift()!();
    await settle();
    // Both slots are taken: the fifth waits for a batch to end, not for the timer.
    expect(written).toHaveLength(2);
  });

  it('with a minBatch, the writes of a turn are shared among the batches that may go; fewer than minBatch beside a batch in flight wait for it to end', async () => {
    const { group, written, open } = harness({
      maxBatch: 100,
      maxWaitMs: 0,
      concurrency: 2,
      minBatch: 3,
    });
    const add = (from: number, to: number) => {
      for (let n = from; n <= to; n++) void group.add({ n, key: `k${n}` });
    };
    const sizes = () => written.map((b) => b.items.map((i) => i.n));
    // Seven in one turn: two batches (of three at least each), as evenly as they split.
    add(1, 7);
    await settle();
    expect(sizes()).toEqual([
      [1, 2, 3, 4],
      [5, 6, 7],
    ]);
    open.shift()!.settle(false);
    await settle();
    // One in flight: two are not worth a statement beside it, with no timer they wait for it.
    add(8, 9);
    await settle();
    expect(written).toHaveLength(2);
    // A third makes minBatch: they go at the end of the turn.
    add(10, 10);
    expect(written).toHaveLength(2);
    await settle();
    expect(sizes().at(-1)).toEqual([8, 9, 10]);
    // Two in flight: a batch's worth more waits for a slot.
    add(11, 14);
    await settle();
    expect(written).toHaveLength(3);
    open.shift()!.settle(false);
    await settle();
    await settle();
    expect(sizes().at(-1)).toEqual([11, 12, 13, 14]);
    // Fewer than minBatch with nothing in flight go at the end of the turn, alone.
    for (const batch of open.splice(0)) batch.settle(false);
    await settle();
    add(15, 15);
    await settle();
    expect(sizes().at(-1)).toEqual([15]);
    expect(group.stats).toEqual({ batches: 5, items: 15 });
  });

  it('with a minBatch and a wait, fewer than minBatch beside a batch in flight go when the timer fires', async () => {
    const { group, written, timers } = harness({
      maxBatch: 100,
      maxWaitMs: 2,
      concurrency: 2,
      minBatch: 4,
    });
    void group.add({ n: 1, key: 'a' });
    await settle();
    void group.add({ n: 2, key: 'b' });
    void group.add({ n: 3, key: 'c' });
    await settle();
    expect(written).toHaveLength(1);
    expect(timers).toHaveLength(1);
    timers.shift()!();
    await settle();
    expect(written.map((b) => b.items.map((i) => i.n))).toEqual([[1], [2, 3]]);
  });

  it('a timer that fires with nothing in flight sends what waits', async () => {
    const { group, written, open, timers } = harness({ maxBatch: 5, maxWaitMs: 2, concurrency: 2 });
    void group.add({ n: 1, key: 'a' });
    await settle();
    void group.add({ n: 2, key: 'b' });
    await settle();
    expect(timers).toHaveLength(1);
    open.shift()!.settle(false);
    await settle();
    await settle();
    // The first ended: nothing in flight, so the second went at the turn's end, not for the timer.
    expect(written.map((b) => b.items.map((i) => i.n))).toEqual([[1], [2]]);
  });

  it('a write whose batch answers the wrong number of results is refused, not given another’s', async () => {
    const group = new GroupCommit<number, number>({
      maxBatch: 5,
      maxWaitMs: 0,
      concurrency: 1,
      write: async () => [1],
    });
    expect(await group.add(1)).toBe(1);
    const [second, third] = [group.add(2), group.add(3)];
    await expect(second).rejects.toThrow('a batch of 2 writes answered 1 results');
    await expect(third).rejects.toThrow('a batch of 2 writes answered 1 results');
  });

  it('a write that throws at once fails its batch, and the next batch goes', async () => {
    let calls = 0;
    const group = new GroupCommit<number, number>({
      maxBatch: 5,
      maxWaitMs: 0,
      concurrency: 1,
      write: (items) => {
        calls += 1;
        if (calls === 1) throw new Error('no connection');
        return Promise.resolve(items.map((i) => i * 10));
      },
    });
    await expect(group.add(1)).rejects.toThrow('no connection');
    expect(await group.add(2)).toBe(20);
  });

  it('an item of several keys shares none of them with another of its batch, and none overtakes it', async () => {
    const written: string[][][] = [];
    const group = new GroupCommit<readonly string[], number>({
      maxBatch: 10,
      maxWaitMs: 0,
      concurrency: 1,
      keyOf: (keys) => keys,
      write: (items) => {
        written.push(items.map((keys) => [...keys]));
        return Promise.resolve(items.map(() => 0));
      },
    });
    await Promise.all(
      [['id1', 'key1'], ['id2', 'key1'], ['id3', 'key2'], ['id2'], ['id4']].map((keys) =>
        group.add(keys),
      ),
    );
    // The second waits for key1; the fourth, of the second's id, waits behind it.
    expect(written).toEqual([
      [['id1', 'key1'], ['id3', 'key2'], ['id4']],
      [['id2', 'key1']],
      [['id2']],
    ]);
  });
});
