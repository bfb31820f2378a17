/**
 * Reading query parameters from whatever a framework hands over: a `URLSearchParams`, a raw query
 * string, or a plain object whose values may be strings, arrays or nested objects (Express's `qs`,
 * Fastify, Koa). Nothing here throws, whatever the input.
 * @module
 */

/**
 * A query as frameworks hand it over: a `URLSearchParams`, a raw query string (with or without the
 * leading `?`), or a plain object of parameter names to values.
 */
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

/**
 * Turn any input into a form {@link readParameter} can read: a raw string is parsed once, an object
 * that only looks like `URLSearchParams` is copied into one, and anything that is not a query at
 * all (null, a number) reads as an empty query.
 * @param query - the query as the framework handed it over
 */
export function toReadableQuery(query: unknown): ReadableQuery {
  if (typeof query === 'string') return new URLSearchParams(query);
  if (typeof query !== 'object' || query === null) return undefined;
  if (query instanceof URLSearchParams) return query;
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

/**
 * Read one parameter: its one string value, or {@link MISSING}, {@link REPEATED} or
 * {@link NOT_A_STRING}.
 * @param query - a query from {@link toReadableQuery}
 * @param name - the parameter name
 */
export function readParameter(query: ReadableQuery, name: string): ParameterReading {
  if (query === undefined) return MISSING;
  if (query instanceof URLSearchParams) {
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
  return Array.isArray(value) ? REPEATED : NOT_A_STRING;
}

/**
 * Every parameter of a query as sorted `[name, value]` pairs, leaving out `exclude`. Repeated
 * parameters give one pair per value; a nested value is written as canonical JSON. Two queries with
 * the same parameters in any order, from any input form, give the same pairs.
 * @param query - the query as the framework handed it over
 * @param exclude - names to leave out (for example the pagination parameters themselves)
 */
export function queryPairs(query: unknown, exclude: ReadonlySet<string>): [string, string][] {
  const readable = toReadableQuery(query);
  const pairs: [string, string][] = [];
  if (readable instanceof URLSearchParams) {
    try {
      readable.forEach((value, name) => {
        if (!exclude.has(name)) pairs.push([name, value]);
      });
    } catch {
      // A Proxy or subclass that passes `instanceof` binds as what could be read of it.
    }
  } else if (readable !== undefined) {
    try {
      for (const name of Object.keys(readable)) {
        const value = readable[name];
        if (exclude.has(name) || value === undefined) continue;
        for (const item of Array.isArray(value) ? value : [value]) {
          pairs.push([name, typeof item === 'string' ? item : canonicalJson(item, 0)]);
        }
      }
    } catch {
      // A hostile object (a getter or Proxy that throws) binds as what could be read of it.
    }
  }
  return pairs.sort(comparePairs);
}

function comparePairs(a: [string, string], b: [string, string]): number {
  if (a[0] !== b[0]) return a[0] < b[0] ? -1 : 1;
  if (a[1] !== b[1]) return a[1] < b[1] ? -1 : 1;
  return 0;
}

// Deep enough for any real query; the bound keeps a cyclic or hostile object from overflowing.
const MAX_DEPTH = 32;

function canonicalJson(value: unknown, depth: number): string {
  if (depth > MAX_DEPTH) return '"…"';
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v, depth + 1)).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const keys = Object.keys(value).sort();
    const members = keys.map(
      (k) =>
        `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k], depth + 1)}`,
    );
    return `{${members.join(',')}}`;
  }
  if (typeof value === 'string') return JSON.stringify(value);
  return String(value);
}

interface SearchParamsLike {
  getAll(name: string): string[];
  forEach(callback: (value: string, name: string) => void): void;
}
