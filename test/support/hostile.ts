/**
 * Hostile values for the "never throws" promises: anything fast-check makes, and values that
 * throw when they are read, inspected or converted (Proxies whose traps throw, throwing getters,
 * revoked proxies), or that are merely unusual (frozen, null prototype, holes, sparse arrays of
 * length 2^32 - 1, huge or broken strings, BigInt, Symbols, functions). `hostileVariant` nests one
 * of them inside an otherwise valid input; `equivalentVariant` changes only the form of a valid
 * input, not its data.
 *
 * The arbitraries give a {@link Hostile}: a label and a maker, never the value itself, because
 * fast-check inspects what it generates (a clone method, a name for the report) and a hostile value
 * would throw at fast-check instead of at the code under test. Each `make()` builds a fresh value.
 */
import fc from 'fast-check';

/** What every hostile read throws, so that a test can tell it from the library's own errors. */
export class HostileReadError extends Error {
  override name = 'HostileReadError';
}

function boom(what: string): never {
  throw new HostileReadError(what);
}

/** Every trap a Proxy handler can have. */
export const PROXY_TRAPS = [
  'get',
  'set',
  'has',
  'deleteProperty',
  'ownKeys',
  'getOwnPropertyDescriptor',
  'defineProperty',
  'getPrototypeOf',
  'setPrototypeOf',
  'isExtensible',
  'preventExtensions',
  'apply',
  'construct',
] as const;

/** One trap of a Proxy handler. */
export type ProxyTrap = (typeof PROXY_TRAPS)[number];

/**
 * A Proxy whose listed traps throw (all of them unless told); the others pass through to `target`.
 * @param traps - the traps that throw
 * @param target - what the proxy stands for (a function, so that `apply` and `construct` apply)
 */
export function throwingProxy<T extends object>(
  traps: readonly ProxyTrap[] = PROXY_TRAPS,
  target: T = function target() {} as unknown as T,
): T {
  const handler: ProxyHandler<T> = {};
  for (const trap of traps) handler[trap] = () => boom(`Proxy trap ${trap}`);
  return new Proxy(target, handler);
}

/**
 * A proxy that has been revoked: every operation on it, `Array.isArray` included, throws.
 * @param target - what it stood for
 */
export function revokedProxy<T extends object>(target: T = {} as T): T {
  const { proxy, revoke } = Proxy.revocable(target, {});
  revoke();
  return proxy;
}

/** The keys that conversions and protocols read: `then`, `length`, the conversions, iteration. */
export const PROTOCOL_KEYS: readonly PropertyKey[] = [
  'then',
  'length',
  'toString',
  'valueOf',
  'toJSON',
  'constructor',
  Symbol.toPrimitive,
  Symbol.iterator,
  Symbol.asyncIterator,
  Symbol.toStringTag,
  Symbol.hasInstance,
];

/**
 * `base` with a getter that throws on each of `keys` (own properties, so spreads and
 * `Object.keys` meet them too).
 * @param keys - the keys whose read throws
 * @param base - the object to put them on (changed and returned)
 */
export function throwingGetters<T extends object>(
  keys: readonly PropertyKey[] = PROTOCOL_KEYS,
  base: T = {} as T,
): T {
  for (const key of keys) {
    Object.defineProperty(base, key, {
      get: () => boom(`getter ${String(key)}`),
      enumerable: true,
      configurable: true,
    });
  }
  return base;
}

/** An object whose conversions to a string or a number throw (methods, not getters). */
function throwingConversions(): object {
  return {
    toString: () => boom('toString'),
    valueOf: () => boom('valueOf'),
    [Symbol.toPrimitive]: () => boom('Symbol.toPrimitive'),
  };
}

/** An array of `length` with holes, a few strings, and an index whose getter throws. */
function holeyArray(length: number, throwingIndex: boolean): unknown[] {
  const array: unknown[] = [];
  array.length = length;
  if (length > 2) array[1] = 'x';
  if (throwingIndex && length > 0) {
    Object.defineProperty(array, length - 1, { get: () => boom('array index') });
  }
  return array;
}

/** An array whose `length` read throws, through a Proxy. */
function arrayWithThrowingLength(items: unknown[]): unknown[] {
  return new Proxy(items, {
    get(target, key, receiver) {
      if (key === 'length') boom('array length');
      return Reflect.get(target, key, receiver);
    },
  });
}

/** A hostile value, made on demand: fast-check only ever sees the label. */
export class Hostile {
  /**
   * @param label - what the value is, for a failure's report
   * @param make - builds a fresh copy of the value
   */
  constructor(
    readonly label: string,
    readonly make: () => unknown,
  ) {}

  [fc.toStringMethod](): string {
    return this.label;
  }
}

function hostile(label: string, make: () => unknown): Hostile {
  return new Hostile(label, make);
}

/** A Proxy target: the kinds of object the library tests for (`instanceof`, `Array.isArray`). */
const proxyTargets: Record<string, () => object> = {
  object: () => ({}),
  'empty array': () => [],
  array: () => ['x'],
  function: () => function target() {},
  URLSearchParams: () => new URLSearchParams('pageSize=5'),
  Uint8Array: () => new Uint8Array(4),
  Headers: () => new Headers(),
  'null-prototype object': () => Object.create(null) as object,
};
const proxyTarget = fc.constantFrom(...Object.keys(proxyTargets));
const targetOf = (name: string): object => (proxyTargets[name] as () => object)();

/** The trap lists that matter most alone, and any subset. */
const trapList: fc.Arbitrary<readonly ProxyTrap[]> = fc.oneof(
  fc.constant(PROXY_TRAPS),
  fc.constantFrom<readonly ProxyTrap[]>(['get'], ['getPrototypeOf'], ['has'], ['ownKeys']),
  fc.subarray([...PROXY_TRAPS], { minLength: 1 }),
);

/** Strings that break naive code: huge, lone surrogates, controls, prototype member names. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    'x'.repeat(1 << 20),
    '9'.repeat(1 << 16),
    '/'.repeat(1 << 16),
    '\uD800',
    '\uDFFF',
    'a\uD800b',
    '\uDC00\uD800',
    '\u0000',
    '__proto__',
    'constructor',
    'toString',
    'hasOwnProperty',
    '',
  ),
  fc.string({ unit: 'binary' }),
);

const plainValue = (value: unknown): Hostile =>
  hostile(
    typeof value === 'string' && value.length > 40
      ? `a string of ${value.length}`
      : fc.stringify(value),
    () => value,
  );

/** One hostile value that is not a container of others. */
export const hostileLeaf: fc.Arbitrary<Hostile> = fc.oneof(
  fc
    .tuple(trapList, proxyTarget)
    .map(([traps, target]) =>
      hostile(`a Proxy of ${target} whose ${traps.join(', ')} throw`, () =>
        throwingProxy(traps, targetOf(target)),
      ),
    ),
  proxyTarget.map((target) =>
    hostile(`a revoked Proxy of ${target}`, () => revokedProxy(targetOf(target))),
  ),
  fc.constant(hostile('an object whose protocol getters throw', () => throwingGetters())),
  fc.constant(hostile('an object whose conversions throw', throwingConversions)),
  fc.constant(
    hostile('an object whose prototype is a throwing Proxy', () =>
      Object.create(throwingProxy(['get', 'has'], {})),
    ),
  ),
  fc
    .tuple(fc.nat({ max: 6 }), fc.boolean())
    .map(([length, throwing]) =>
      hostile(`an array of ${length} with holes${throwing ? ' and a throwing index' : ''}`, () =>
        holeyArray(length, throwing),
      ),
    ),
  fc.constant(hostile('an array whose length throws', () => arrayWithThrowingLength(['x']))),
  fc.constant(
    hostile('a sparse array of length 2^32 - 1', () => {
      const sparse: unknown[] = ['x'];
      sparse.length = 2 ** 32 - 1;
      return sparse;
    }),
  ),
  fc.constant(hostile('a frozen object', () => Object.freeze({ a: 1 }))),
  fc.constant(hostile('a null-prototype object', () => Object.create(null))),
  hostileString.map(plainValue),
  fc.bigInt().map(plainValue),
  fc.string().map((description) => hostile(`Symbol(${description})`, () => Symbol(description))),
  fc
    .constantFrom(
      () => 1,
      class Klass {},
      async () => 1,
      function* generator() {},
    )
    .map((fn) => hostile(`a function ${fn.name}`, () => fn)),
  fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, -0, Number.MAX_VALUE).map(plainValue),
);

/** Anything fast-check makes (BigInt, null prototypes, sparse arrays included), or a hostile leaf. */
export const hostileValue = (): fc.Arbitrary<Hostile> =>
  fc.oneof(
    {
      weight: 2,
      arbitrary: fc
        .anything({
          withBigInt: true,
          withNullPrototype: true,
          withSparseArray: true,
          withObjectString: true,
          withBoxedValues: true,
          withMap: true,
          withSet: true,
          withDate: true,
          withTypedArray: true,
        })
        .map(plainValue),
    },
    { weight: 4, arbitrary: hostileLeaf },
    {
      weight: 1,
      arbitrary: fc
        .array(hostileLeaf, { maxLength: 3 })
        .map((items) =>
          hostile(`[${items.map((i) => i.label).join(', ')}]`, () => items.map((i) => i.make())),
        ),
    },
    {
      weight: 1,
      arbitrary: fc.dictionary(fc.string(), hostileLeaf, { maxKeys: 3 }).map((members) =>
        hostile(
          `{ ${Object.entries(members)
            .map(([k, v]) => `${JSON.stringify(k)}: ${v.label}`)
            .join(', ')} }`,
          () => Object.fromEntries(Object.entries(members).map(([k, v]) => [k, v.make()])),
        ),
      ),
    },
  );

type Path = readonly PropertyKey[];

// Every path to a plain object or array inside `value`, the root (`[]`) first, then every member.
function pathsOf(value: unknown, path: Path = [], out: Path[] = []): Path[] {
  out.push(path);
  if (typeof value === 'object' && value !== null && isPlain(value)) {
    for (const key of Object.keys(value)) {
      pathsOf((value as Record<string, unknown>)[key], [...path, key], out);
    }
  }
  return out;
}

function isPlain(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return Array.isArray(value) || proto === Object.prototype || proto === null;
}

// A copy of the plain objects and arrays in `value`, everything else shared; an object met twice is
// copied once, so that identities inside (a decision's policy in its statuses) survive.
function copy(value: unknown, seen = new Map<object, unknown>()): unknown {
  if (typeof value !== 'object' || value === null || !isPlain(value)) return value;
  const known = seen.get(value);
  if (known !== undefined) return known;
  const out: Record<string, unknown> = Array.isArray(value)
    ? (new Array(value.length) as unknown as Record<string, unknown>)
    : Object.getPrototypeOf(value) === null
      ? Object.create(null)
      : {};
  seen.set(value, out);
  for (const key of Object.keys(value)) {
    out[key] = copy((value as Record<string, unknown>)[key], seen);
  }
  return out;
}

// `root` with the value at `path` replaced by `change(old)`, or, for `asGetter`, made a getter
// returning nothing but a throw. The root itself is replaced when the path is empty.
function changeAt(
  root: unknown,
  path: Path,
  change: (old: unknown) => unknown,
  asGetter = false,
): unknown {
  if (path.length === 0) return change(root);
  const fresh = copy(root);
  let parent = fresh as Record<PropertyKey, unknown>;
  for (const key of path.slice(0, -1)) parent = parent[key] as Record<PropertyKey, unknown>;
  const last = path[path.length - 1] as PropertyKey;
  if (asGetter) {
    Object.defineProperty(parent, last, {
      get: () => boom(`getter ${String(last)}`),
      enumerable: true,
      configurable: true,
    });
  } else {
    parent[last] = change(parent[last]);
  }
  return fresh;
}

/** How a node of a valid input was made hostile, for a failure's report. */
export type HostileChange =
  | 'replaced'
  | 'getter'
  | 'proxy'
  | 'revoked'
  | 'protocol-getters'
  | 'holes'
  | 'throwing-length';

/**
 * A valid input with one node made hostile: replaced by a hostile value, turned into a getter that
 * throws, wrapped in a Proxy with throwing traps, revoked, given throwing protocol getters
 * (`then`, `length`, `toString`, `Symbol.iterator`...), holes or a `length` that throws.
 * @param valid - plain data (objects, arrays and leaves) that the function accepts
 */
export function hostileVariant(valid: unknown): fc.Arbitrary<Hostile> {
  const paths = pathsOf(valid);
  return fc
    .tuple(
      fc.constantFrom(...paths),
      fc.constantFrom<HostileChange>(
        'replaced',
        'getter',
        'proxy',
        'revoked',
        'protocol-getters',
        'holes',
        'throwing-length',
      ),
      hostileValue(),
      trapList,
    )
    .map(([path, change, value, traps]) => {
      const at = `at /${path.map(String).join('/')}`;
      const label =
        change === 'replaced'
          ? `${value.label} ${at}`
          : change === 'proxy'
            ? `a Proxy whose ${traps.join(', ')} throw ${at}`
            : `${change} ${at}`;
      return hostile(label, () => makeVariant(valid, path, change, value, traps));
    });
}

function makeVariant(
  valid: unknown,
  path: Path,
  change: HostileChange,
  value: Hostile,
  traps: readonly ProxyTrap[],
): unknown {
  const isObject = (old: unknown): old is object => typeof old === 'object' && old !== null;
  switch (change) {
    case 'replaced':
      return changeAt(valid, path, () => value.make());
    case 'getter':
      return path.length === 0 ? throwingGetters() : changeAt(valid, path, () => 0, true);
    case 'proxy':
      return changeAt(valid, path, (old) =>
        throwingProxy(traps, isObject(old) ? (copy(old) as object) : () => old),
      );
    case 'revoked':
      return changeAt(valid, path, (old) =>
        revokedProxy(isObject(old) ? (copy(old) as object) : {}),
      );
    case 'protocol-getters':
      return changeAt(valid, path, (old) =>
        isObject(old) && !Array.isArray(old)
          ? throwingGetters(
              PROTOCOL_KEYS.filter((k) => k !== 'length'),
              copy(old) as object,
            )
          : throwingGetters(),
      );
    case 'holes':
      return changeAt(valid, path, (old) => {
        if (!Array.isArray(old)) return holeyArray(4, false);
        const holey = copy(old) as unknown[];
        holey.length += 2;
        return holey;
      });
    case 'throwing-length':
      return changeAt(valid, path, (old) =>
        arrayWithThrowingLength(Array.isArray(old) ? (copy(old) as unknown[]) : ['x']),
      );
  }
}

/**
 * A valid input in another form with the same data: one of its objects or arrays frozen, given a
 * null prototype (objects), or seen through a Proxy whose traps all pass through. A function must
 * answer it exactly as it answers the plain input.
 * @param valid - plain data
 */
export function equivalentVariant(valid: unknown): fc.Arbitrary<Hostile> {
  const containers = pathsOf(valid).filter((path) => {
    let node = valid;
    for (const key of path) node = (node as Record<PropertyKey, unknown>)[key];
    return typeof node === 'object' && node !== null;
  });
  return fc
    .tuple(fc.constantFrom(...containers), fc.constantFrom('frozen', 'null-prototype', 'proxy'))
    .map(([path, form]) =>
      hostile(`${form} at /${path.map(String).join('/')}`, () =>
        changeAt(valid, path, (old) => {
          const fresh = copy(old) as object;
          if (form === 'frozen') return Object.freeze(fresh);
          if (form === 'proxy') return new Proxy(fresh, {});
          if (Array.isArray(fresh)) return Object.freeze(fresh);
          return Object.assign(Object.create(null) as object, fresh);
        }),
      ),
    );
}
