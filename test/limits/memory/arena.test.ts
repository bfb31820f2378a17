import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Arena } from '../../../src/limits/memory/arena.js';

type Op = { kind: 'alloc'; size: number; dirty: boolean } | { kind: 'free'; pick: number };

const ops = fc.array(
  fc.oneof(
    fc.record({
      kind: fc.constant('alloc' as const),
      size: fc.oneof(fc.integer({ min: 1, max: 40 }), fc.constantFrom(1_024, 1_025, 2_048)),
      dirty: fc.boolean(),
    }),
    fc.record({ kind: fc.constant('free' as const), pick: fc.nat() }),
  ),
  { maxLength: 200 },
);

describe('Arena', () => {
  it('hands out blocks that are zeroed (by alloc), never overlap a live block, and keep what was written in them while others come and go', () => {
    fc.assert(
      fc.property(ops, fc.integer({ min: 1, max: 64 }), (sequence: Op[], initial) => {
        const arena = new Arena(initial);
        const live: Array<{ at: number; size: number; mark: number }> = [];
        let mark = 1;
        for (const op of sequence) {
          if (op.kind === 'alloc') {
            const at = op.dirty ? arena.allocDirty(op.size) : arena.alloc(op.size);
            const m = arena.mem;
            expect(at + op.size).toBeLessThanOrEqual(m.length);
            // alloc zeroes a block; allocDirty may hand one back as it was freed.
            if (!op.dirty) expect(m.subarray(at, at + op.size).every((v) => v === 0)).toBe(true);
            const overlapping = live.filter((o) => at < o.at + o.size && o.at < at + op.size);
            expect(overlapping).toEqual([]);
            m.fill(mark, at, at + op.size);
            live.push({ at, size: op.size, mark: mark++ });
          } else if (live.length > 0) {
            const [gone] = live.splice(op.pick % live.length, 1);
            arena.free(gone!.at, gone!.size);
          }
          // Every live block still holds its own mark: nothing else wrote into it.
          const damaged = live.filter((block) =>
            arena.mem.subarray(block.at, block.at + block.size).some((v) => v !== block.mark),
          );
          expect(damaged).toEqual([]);
          expect(arena.usedSlots).toBe(live.reduce((n, b) => n + b.size, 0));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('gives a freed block of the same size back before growing', () => {
    const arena = new Arena(16);
    const a = arena.alloc(8);
    arena.alloc(8);
    const length = arena.mem.length;
    arena.free(a, 8);
    expect(arena.alloc(8)).toBe(a);
    expect(arena.mem.length).toBe(length);
    // A size with no free block takes new room, growing the slots.
    arena.alloc(8);
    expect(arena.mem.length).toBeGreaterThan(length);
  });
});
