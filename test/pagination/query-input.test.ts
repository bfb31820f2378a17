import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cursorValidator, pageNumberValidator } from '../../src/index.js';
import {
  MAX_QUERY_VALUES,
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
        expect(expected.ok && expected.pairs.some(([name]) => name === 'limit')).toBe(false);
      }),
    );
  });

  it('writes nested values as canonical JSON, whatever their key order', () => {
    expect(queryPairs({ f: { b: '1', a: ['2'] } }, new Set())).toEqual({
      ok: true,
      pairs: [['f', '{"a":["2"],"b":"1"}']],
    });
    expect(queryPairs({ f: { a: ['2'], b: '1' } }, new Set())).toEqual({
      ok: true,
      pairs: [['f', '{"a":["2"],"b":"1"}']],
    });
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
    expect(queryPairs(hostile, new Set())).toEqual({ ok: true, pairs: [['status', 'open']] });
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
      expect(queryPairs(query, new Set())).toEqual({ ok: true, pairs: [] });
      expect(pageNumberValidator()(query)).toEqual({
        ok: true,
        value: { pageNumber: 1, pageSize: 20 },
      });
      expect(cursorValidator()(query).ok).toBe(true);
    }
  });

  it('names a parameter whose value refers to itself, at any depth, instead of writing it', () => {
    for (const depth of [0, 1, 31, 32, 33, 1_000]) {
      const cyclic: Record<string, unknown> = {};
      let inner = cyclic;
      for (let i = 0; i < depth; i++) {
        const next: Record<string, unknown> = {};
        inner.next = next;
        inner = next;
      }
      inner.a = cyclic;
      inner.b = cyclic;
      expect(queryPairs({ status: 'open', f: cyclic }, new Set())).toEqual({
        ok: false,
        parameter: 'f',
        problem: 'the value of "f" refers to itself',
      });
      expect(queryPairs({ f: [['x', cyclic]] }, new Set())).toMatchObject({
        ok: false,
        parameter: 'f',
      });
      expect(queryPairs({ f: cyclic }, new Set(['f']))).toEqual({ ok: true, pairs: [] });
    }
  });

  it('writes a value nested deeper than the call stack allows in full', () => {
    let deep: unknown = 'x';
    for (let i = 0; i < 50_000; i++) deep = i % 2 === 0 ? [deep] : { d: deep };
    const result = queryPairs({ f: deep }, new Set());
    const expected = `${'{"d":['.repeat(25_000)}"x"${']}'.repeat(25_000)}`;
    expect(result.ok && result.pairs.length === 1 && result.pairs[0]?.[1] === expected).toBe(true);
  });

  it('writes a value with shared references as its copy without them', () => {
    fc.assert(
      fc.property(
        fc.array(fc.jsonValue({ maxDepth: 2 }), { minLength: 1, maxLength: 4 }),
        fc.array(fc.tuple(fc.nat(), fc.nat(), fc.string()), { maxLength: 12 }),
        (leaves, links) => {
          // Arrange: nodes that refer to earlier ones only (shared, never cyclic), and their copy.
          const nodes: unknown[] = [...leaves];
          for (const [a, b, key] of links) {
            nodes.push({ [key]: nodes[a % nodes.length], z: [nodes[b % nodes.length]] });
          }
          const shared = nodes[nodes.length - 1];
          const copy: unknown = JSON.parse(JSON.stringify(shared));
          // Act
          const result = queryPairs({ f: shared }, new Set());
          // Assert: within the bound, sharing changes nothing.
          fc.pre(result.ok || !result.problem.includes('more than'));
          expect(result).toEqual(queryPairs({ f: copy }, new Set()));
          expect(result.ok).toBe(true);
        },
      ),
    );
  });

  it('reads at most MAX_QUERY_VALUES members, however often a value is shared (linear, not exponential)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 64 }),
        fc.integer({ min: 2, max: 4 }),
        fc.boolean(),
        (depth, fanOut, asObject) => {
          // Arrange: every level holds the level below fanOut times, read through a counting Proxy:
          // fanOut^depth paths, which a walk without a bound would take ages to write.
          let reads = 0;
          const count = <T extends object>(target: T): T =>
            new Proxy(target, {
              get(object, key, receiver) {
                reads++;
                return Reflect.get(object, key, receiver);
              },
            });
          let node: unknown = 'x';
          for (let i = 0; i < depth; i++) {
            const children = Array.from({ length: fanOut }, () => node);
            node = count(asObject ? { ...children } : children);
          }
          // Act
          const result = queryPairs({ f: node, g: 'y' }, new Set());
          // Assert
          expect(reads).toBeLessThanOrEqual(2 * MAX_QUERY_VALUES);
          const paths = (fanOut ** (depth + 1) - 1) / (fanOut - 1);
          if (paths <= MAX_QUERY_VALUES) {
            expect(result.ok).toBe(true);
          } else {
            expect(result).toEqual({
              ok: false,
              parameter: 'f',
              problem: `the query holds more than ${MAX_QUERY_VALUES} values, nested ones included (the limit was reached in "f")`,
            });
          }
        },
      ),
      { numRuns: 10 },
    );
  });

  it('refuses a sparse array of length 2^32 - 1 without walking it, and a query of more values than the bound', () => {
    const sparse = new Array(2 ** 32 - 1);
    for (const query of [{ f: sparse }, { f: [sparse] }, { f: { a: sparse } }]) {
      expect(queryPairs(query, new Set())).toMatchObject({ ok: false, parameter: 'f' });
    }
    const many = Array.from({ length: MAX_QUERY_VALUES + 1 }, () => 'v');
    expect(queryPairs({ f: many }, new Set())).toMatchObject({ ok: false, parameter: 'f' });
    expect(queryPairs({ f: many.slice(1) }, new Set()).ok).toBe(true);
  });

  it('writes holes and non-JSON values as before: [1,,undefined] as "[1,,undefined]"', () => {
    // biome-ignore lint/suspicious/noSparseArray: the hole is the case under test
    const holey = [1, , undefined];
    expect(queryPairs({ f: { h: holey, n: null, t: true } }, new Set())).toEqual({
      ok: true,
      pairs: [['f', '{"h":[1,,undefined],"n":null,"t":true}']],
    });
  });
});
