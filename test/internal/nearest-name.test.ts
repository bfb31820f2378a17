// Edit distance and the nearest-name suggestion.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { editDistance, nearestName } from '../../src/internal/nearest-name.js';

const word = fc.string({ unit: fc.constantFrom('a', 'b', 'c', '-'), maxLength: 8 });

describe('nearest name', () => {
  it('edit distance is zero only for equal strings, symmetric, and at most the longer length', () => {
    fc.assert(
      fc.property(word, word, (a, b) => {
        const d = editDistance(a, b);
        expect(d === 0).toBe(a === b);
        expect(editDistance(b, a)).toBe(d);
        expect(d).toBeLessThanOrEqual(Math.max(a.length, b.length));
        expect(d).toBeGreaterThanOrEqual(Math.abs(a.length - b.length));
      }),
    );
  });

  it('counts insertions, deletions and substitutions', () => {
    expect(editDistance('craeted', 'created')).toBe(2);
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('', 'abc')).toBe(3);
  });

  it('picks a candidate no farther than any other, the first of equals', () => {
    fc.assert(
      fc.property(word, fc.array(word, { minLength: 1, maxLength: 6 }), (name, candidates) => {
        const nearest = nearestName(name, candidates)!;
        const best = Math.min(...candidates.map((c) => editDistance(name, c)));
        expect(editDistance(name, nearest)).toBe(best);
        expect(candidates.find((c) => editDistance(name, c) === best)).toBe(nearest);
      }),
    );
    expect(nearestName('x', [])).toBeUndefined();
  });
});
