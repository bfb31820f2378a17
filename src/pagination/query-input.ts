/** Reading query parameters from whatever a framework hands over; nothing here throws. @module */
import { isArray } from '../internal/describe.js';
import { isInstance } from '../internal/read-once.js';

/** A query as frameworks hand it over: `URLSearchParams`, a raw query string, or a plain object. */
export type QueryInput = URLSearchParams | string | Readonly<Record<string, unknown>>;

/** A parameter that is absent (or `undefined` in a plain object). */
export const MISSING: unique symbol = Symbol('missing');
/** A parameter given more than once, or as an array. */
export const REPEATED: unique symbol = Symbol('repeated');
/** A parameter whose value is a nested object, a number or anything else but a string. */
export const NOT_A_STRING: unique symbol = Symbol('not a string');

/** What one parameter of a query holds: its one string value, or why there is none. */
export type ParameterReading = string | typeof MISSING | typeof REPEATED | typeof NOT_A_STRING;

/** A query in a form that can be read more than once cheaply. */
export type ReadableQuery = URLSearchParams | Readonly<Record<string, unknown>> | undefined;

/** Any input as a query {@link readParameter} reads; anything not a query reads as empty. */
export function toReadableQuery(query: unknown): ReadableQuery {
  if (typeof query === 'string') return new URLSearchParams(query);
  if (typeof query !== 'object' || query === null) return undefined;
  // A Proxy whose getPrototypeOf trap throws is no URLSearchParams, and may still be read as data.
  if (isInstance(query, URLSearchParams)) return query;
  try {
    // An object that only looks like URLSearchParams (another realm, a polyfill) is copied into one.
    // Parsed query objects never hold functions, so this cannot mistake one for the other.
    const candidate = query as Partial<SearchParamsLike>;
    if (typeof candidate.getAll === 'function' && typeof candidate.forEach === 'function') {
      const copy = new URLSearchParams();
      candidate.forEach((value, name) => {
        copy.append(String(name), String(value));
      });
      return copy;
    }
  } catch {
    // A hostile object (a getter or Proxy that throws) must not make a validator throw.
    return undefined;
  }
  return query as Readonly<Record<string, unknown>>;
}

/** One parameter's string value, or {@link MISSING}, {@link REPEATED} or {@link NOT_A_STRING}. */
export function readParameter(query: ReadableQuery, name: string): ParameterReading {
  if (query === undefined) return MISSING;
  if (isInstance(query, URLSearchParams)) {
    let values: string[];
    try {
      values = query.getAll(name);
    } catch {
      // A Proxy or subclass that passes `instanceof` but cannot be read reads as empty.
      return MISSING;
    }
    if (values.length === 0) return MISSING;
    return values.length > 1 ? REPEATED : (values[0] as string);
  }
  let value: unknown;
  try {
    value = query[name];
    // Own properties only: `constructor` or `__proto__` of a plain object are not parameters.
    if (value !== undefined && !Object.hasOwn(query, name)) return MISSING;
  } catch {
    return MISSING;
  }
  if (typeof value === 'string') return value;
  if (value === undefined) return MISSING;
  // `qs` and friends turn `?a=1&a=2` (and `?a[]=1`) into an array: never one plain value.
  return isArray(value) ? REPEATED : NOT_A_STRING;
}

/**
 * Most values (shared references counted each time) a plain-object query may hold for
 * {@link queryPairs}: keeps the work linear in the input; a parsed URL never comes near it.
 */
export const MAX_QUERY_VALUES = 100_000;

/** The pairs of a query, or the parameter that stopped it being written as pairs and why. */
export type QueryPairs =
  | {
      /** Every parameter could be written. */
      readonly ok: true;
      /** Sorted `[name, value]` pairs. */
      readonly pairs: [string, string][];
    }
  | {
      /** A parameter cannot be written. */
      readonly ok: false;
      /** Its name. */
      readonly parameter: string;
      /** Why, as a clause such as `the value of "f" refers to itself`. */
      readonly problem: string;
    };

/**
 * Every parameter but `exclude` as sorted `[name, value]` pairs, the same for the same parameters
 * in any order and form; nested values as canonical JSON. A cycle or more than
 * {@link MAX_QUERY_VALUES} values names the parameter instead.
 */
export function queryPairs(query: unknown, exclude: ReadonlySet<string>): QueryPairs {
  const readable = toReadableQuery(query);
  const pairs: [string, string][] = [];
  if (isInstance(readable, URLSearchParams)) {
    try {
      readable.forEach((value, name) => {
        if (!exclude.has(name)) pairs.push([name, value]);
      });
    } catch {
      // A Proxy or subclass that passes `instanceof` binds as what could be read of it.
    }
  } else if (readable !== undefined) {
    const budget = { left: MAX_QUERY_VALUES };
    try {
      for (const name of Object.keys(readable)) {
        const value = readable[name];
        if (exclude.has(name) || value === undefined) continue;
        const items: readonly unknown[] = Array.isArray(value) ? value : [value];
        // Counted before the loop: a sparse array's length says nothing of its size in memory.
        if (items.length > budget.left) return tooManyValues(name);
        budget.left -= items.length;
        for (const item of items) {
          const written = typeof item === 'string' ? item : canonicalJson(item, budget);
          if (written === CYCLE) {
            return {
              ok: false,
              parameter: name,
              problem: `the value of ${JSON.stringify(name)} refers to itself`,
            };
          }
          if (written === TOO_MANY) return tooManyValues(name);
          pairs.push([name, written]);
        }
      }
    } catch {
      // A hostile object (a getter or Proxy that throws) binds as what could be read of it.
    }
  }
  return { ok: true, pairs: pairs.sort(comparePairs) };
}

function tooManyValues(name: string): QueryPairs {
  return {
    ok: false,
    parameter: name,
    problem: `the query holds more than ${MAX_QUERY_VALUES} values, nested ones included (the limit was reached in ${JSON.stringify(name)})`,
  };
}

function comparePairs(a: [string, string], b: [string, string]): number {
  if (a[0] !== b[0]) return a[0] < b[0] ? -1 : 1;
  if (a[1] !== b[1]) return a[1] < b[1] ? -1 : 1;
  return 0;
}

const CYCLE: unique symbol = Symbol('cycle');
const TOO_MANY: unique symbol = Symbol('too many values');

/** What is left to write: text as it is, a value, or the end of an object being written. */
type Step = string | { readonly value: unknown } | { readonly leave: object };

// JSON with sorted keys from an explicit stack, so depth cannot overflow the call stack. Every
// value reached counts against `budget`, so shared references cannot blow up the work; a child
// list is counted before it is walked (a sparse 2^32 - 1 array costs one comparison).
function canonicalJson(
  root: unknown,
  budget: { left: number },
): string | typeof CYCLE | typeof TOO_MANY {
  const written: string[] = [];
  const open = new Set<object>();
  const steps: Step[] = [{ value: root }];
  for (let step = steps.pop(); step !== undefined; step = steps.pop()) {
    if (typeof step === 'string') {
      written.push(step);
      continue;
    }
    if ('leave' in step) {
      open.delete(step.leave);
      continue;
    }
    const { value } = step;
    if (typeof value === 'string') {
      written.push(JSON.stringify(value));
      continue;
    }
    if (typeof value !== 'object' || value === null) {
      written.push(String(value));
      continue;
    }
    if (open.has(value)) return CYCLE;
    // Pushed in reverse: the last step pushed is written first.
    if (Array.isArray(value)) {
      const { length } = value;
      if (length > budget.left) return TOO_MANY;
      budget.left -= length;
      open.add(value);
      steps.push({ leave: value }, ']');
      for (let i = length - 1; i >= 0; i--) {
        if (i in value) steps.push({ value: value[i] });
        if (i > 0) steps.push(',');
      }
      steps.push('[');
    } else {
      const keys = Object.keys(value).sort();
      if (keys.length > budget.left) return TOO_MANY;
      budget.left -= keys.length;
      open.add(value);
      steps.push({ leave: value }, '}');
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i] as string;
        steps.push({ value: (value as Record<string, unknown>)[key] });
        steps.push(`${i > 0 ? ',' : ''}${JSON.stringify(key)}:`);
      }
      steps.push('{');
    }
  }
  return written.join('');
}

interface SearchParamsLike {
  getAll(name: string): string[];
  forEach(callback: (value: string, name: string) => void): void;
}
