import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cursorValidator, pageNumberValidator } from '../../src/index.js';
import {
  MISSING,
  NOT_A_STRING,
  queryPairs,
  REPEATED,
  readParameter,
  toReadableQuery,
} from '../../src/pagination/query-input.js';

const pairs = fc.array(fc.tuple(fc.string(), fc.string()), { maxLength: 6 });

/** An object that behaves like URLSearchParams without being one (another realm, a polyfill). */
function lookalike(entries: [string, string][]) {
  const real = new URLSearchParams(entries);
  return {
    getAll: (name: string) => real.getAll(name),
    forEach: (callback: (value: string, name: string) => void) => real.forEach(callback),
  };
}

describe('query input', () => {
  it('reads a parameter the same from URLSearchParams, a raw string and a look-alike', () => {
    fc.assert(
      fc.property(pairs, fc.string(), (entries, name) => {
        const forms = [
          new URLSearchParams(entries),
          new URLSearchParams(entries).toString(),
          lookalike(entries),
        ].map((q) => readParameter(toReadableQuery(q), name));
        const count = entries.filter(([n]) => n === name).length;
        const expected =
          count === 0 ? MISSING : count > 1 ? REPEATED : entries.find(([n]) => n === name)?.[1];
        expect(forms).toEqual([expected, expected, expected]);
      }),
    );
  });

  it('tells a string, an absent value, an array and anything else apart in a plain object', () => {
    const query = toReadableQuery({ a: 'x', b: undefined, c: ['x'], d: { e: 'f' }, g: 3 });
    expect(['a', 'b', 'c', 'd', 'g', 'h'].map((n) => readParameter(query, n))).toEqual([
      'x',
      MISSING,
      REPEATED,
      NOT_A_STRING,
      NOT_A_STRING,
      MISSING,
    ]);
  });

  it('gives the same sorted pairs for the same parameters in any order and any input form', () => {
    fc.assert(
      fc.property(pairs, (entries) => {
        const exclude = new Set(['limit']);
        const expected = queryPairs(new URLSearchParams(entries), exclude);
        const reversed = [...entries].reverse();
        expect(queryPairs(new URLSearchParams(reversed).toString(), exclude)).toEqual(expected);
        expect(queryPairs(lookalike(reversed), exclude)).toEqual(expected);
        const object: Record<string, string[]> = {};
        for (const [name, value] of entries) {
          if (!Object.hasOwn(object, name)) {
            Object.defineProperty(object, name, { value: [], enumerable: true });
          }
          object[name]?.push(value);
        }
        expect(queryPairs(object, exclude)).toEqual(expected);
        expect(expected.some(([name]) => name === 'limit')).toBe(false);
      }),
    );
  });

  it('writes nested values as canonical JSON, whatever their key order', () => {
    expect(queryPairs({ f: { b: '1', a: ['2'] } }, new Set())).toEqual([
      ['f', '{"a":["2"],"b":"1"}'],
    ]);
    expect(queryPairs({ f: { a: ['2'], b: '1' } }, new Set())).toEqual([
      ['f', '{"a":["2"],"b":"1"}'],
    ]);
  });

  it('reads a parameter whose getter throws as absent, and binds what else it can read', () => {
    const hostile = Object.defineProperty({ status: 'open' }, 'cursor', {
      enumerable: true,
      get() {
        throw new Error('no');
      },
    });
    const query = toReadableQuery(hostile);
    expect(readParameter(query, 'cursor')).toBe(MISSING);
    expect(readParameter(query, 'status')).toBe('open');
    expect(queryPairs(hostile, new Set())).toEqual([['status', 'open']]);
  });

  it('reads a URLSearchParams Proxy or subclass that throws as empty, and validators answer instead of throwing', () => {
    class Throwing extends URLSearchParams {
      override getAll(): string[] {
        throw new Error('no');
      }
      override forEach(): void {
        throw new Error('no');
      }
    }
    const hostile = [new Proxy(new URLSearchParams('pageSize=5'), {}), new Throwing('pageSize=5')];
    for (const query of hostile) {
      expect(readParameter(toReadableQuery(query), 'pageSize')).toBe(MISSING);
      expect(queryPairs(query, new Set())).toEqual([]);
      expect(pageNumberValidator()(query)).toEqual({
        ok: true,
        value: { pageNumber: 1, pageSize: 20 },
      });
      expect(cursorValidator()(query).ok).toBe(true);
    }
  });

  it('cuts a nested value off below 32 levels, so a cyclic query object is written and never overflows', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const [[name, value] = ['', '']] = queryPairs({ f: cyclic }, new Set());
    expect(name).toBe('f');
    expect(value).toBe(`${'{"self":'.repeat(33)}"…"${'}'.repeat(33)}`);
  });
});
