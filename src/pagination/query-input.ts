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

/** What one parameter of a query holds. */
export type ParameterReading =
  | { readonly kind: 'missing' }
  | { readonly kind: 'value'; readonly value: string }
  | { readonly kind: 'repeated' }
  | { readonly kind: 'not_a_string' };

const MISSING: ParameterReading = Object.freeze({ kind: 'missing' });
const REPEATED: ParameterReading = Object.freeze({ kind: 'repeated' });
const NOT_A_STRING: ParameterReading = Object.freeze({ kind: 'not_a_string' });

interface SearchParamsLike {
  getAll(name: string): string[];
  forEach(callback: (value: string, name: string) => void): void;
}

/** A query in a form that can be read more than once cheaply. */
export type ReadableQuery = SearchParamsLike | Readonly<Record<string, unknown>> | undefined;

/**
 * Turn any input into a form {@link readParameter} can read: a raw string is parsed once; anything
 * that is not a query at all (null, a number) reads as an empty query.
 * @param query - the query as the framework handed it over
 */
export function toReadableQuery(query: unknown): ReadableQuery {
  if (typeof query === 'string') return new URLSearchParams(query);
  if (typeof query !== 'object' || query === null) return undefined;
  if (isSearchParamsLike(query)) return query;
  return query as Readonly<Record<string, unknown>>;
}

/**
 * Read one parameter: missing, exactly one string value, repeated, or something that is not a
 * string (a nested object, a number).
 * @param query - a query from {@link toReadableQuery}
 * @param name - the parameter name
 */
export function readParameter(query: ReadableQuery, name: string): ParameterReading {
  if (query === undefined) return MISSING;
  if (isSearchParamsLike(query)) {
    const values = safely(() => query.getAll(name), []);
    if (values.length === 0) return MISSING;
    if (values.length > 1) return REPEATED;
    return { kind: 'value', value: String(values[0]) };
  }
  // Own properties only: `constructor` or `__proto__` of a plain object are not parameters.
  let value: unknown;
  try {
    value = Object.hasOwn(query, name) ? query[name] : undefined;
  } catch {
    return MISSING;
  }
  if (value === undefined) return MISSING;
  if (typeof value === 'string') return { kind: 'value', value };
  // `qs` and friends turn `?a=1&a=2` (and `?a[]=1`) into an array: never one plain value.
  if (Array.isArray(value)) return REPEATED;
  return NOT_A_STRING;
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
  if (readable === undefined) return pairs;
  if (isSearchParamsLike(readable)) {
    safely(() => {
      readable.forEach((value, name) => {
        if (!exclude.has(name)) pairs.push([name, String(value)]);
      });
    }, undefined);
  } else {
    for (const name of safely(() => Object.keys(readable), [])) {
      if (exclude.has(name)) continue;
      const value = safely(() => readable[name], undefined);
      if (value === undefined) continue;
      const values = Array.isArray(value) ? value : [value];
      for (const item of values) {
        pairs.push([name, typeof item === 'string' ? item : canonicalJson(item, 0)]);
      }
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

function isSearchParamsLike(value: object): value is SearchParamsLike {
  if (value instanceof URLSearchParams) return true;
  const candidate = value as Partial<SearchParamsLike>;
  return safely(
    () => typeof candidate.getAll === 'function' && typeof candidate.forEach === 'function',
    false,
  );
}

// A hostile object (a getter or Proxy that throws) must not make a validator throw.
function safely<T>(read: () => T, fallback: T): T {
  try {
    return read();
  } catch {
    return fallback;
  }
}
