/**
 * The one options reader: each key read once (a getter cannot answer the check one value and the
 * code another), unknown keys refused with the nearest name, one wording for every mistake.
 * @module
 */
import { ConfigurationError, type ConfigurationErrorCode } from '../errors/index.js';
import { describe, isArray } from './describe.js';
import { nearestName } from './nearest-name.js';

/** What a rule answers for a value it refuses. */
export const INVALID: unique symbol = Symbol('invalid');

/** How one option is checked and read. */
export interface Rule<T> {
  /** What the value must be, finishing "`name` must be …" (e.g. `a whole number from 1 to 10`). */
  readonly expected: string;
  /** The code of the error for a refused value. @defaultValue `invalid_option` */
  readonly code?: ConfigurationErrorCode | undefined;
  /**
   * The value to use, or {@link INVALID}. Never called with `undefined`. May throw a
   * `ConfigurationError` of its own where a refusal needs more than the one wording.
   * @param value - the option as given
   * @param name - the option's name, for messages of its own
   */
  read(value: unknown, name: string): T | typeof INVALID;
}

/** The options a set of rules reads. */
export type Rules = Readonly<Record<string, Rule<unknown>>>;

/** What a rule gives. */
export type RuleValue<R> = R extends Rule<infer T> ? T : never;

/** The options read: a default where one is given, otherwise the value or `undefined`. */
export type ReadOptions<R extends Rules, D> = {
  -readonly [K in keyof R]: K extends keyof D ? RuleValue<R[K]> : RuleValue<R[K]> | undefined;
};

/** How {@link readOptions} treats the options object itself. */
export interface ReaderSettings<D> {
  /** Defaults for keys left out or `undefined`: one object literal, trusted as written. */
  readonly defaults?: D;
  /** Whether leaving the options out is a mistake. @defaultValue false */
  readonly required?: boolean;
  /** An example of the options, for messages (e.g. `{ maxKeys: 100_000 }`). */
  readonly example?: string;
}

/**
 * Read an options object by its rules.
 * @param options - the options as given; `undefined` reads as `{}` unless `required`
 * @param owner - whose options they are, for messages (e.g. `createLimiter`)
 * @param rules - one rule per known key
 * @param settings - defaults, whether the options are required, an example
 * @throws ConfigurationError `invalid_option` for options that are not an object, an unknown key,
 *   or a read that throws; the rule's code for a refused value
 */
export function readOptions<
  R extends Rules,
  D extends Partial<Record<keyof R, unknown>> = Record<never, never>,
>(options: unknown, owner: string, rules: R, settings: ReaderSettings<D> = {}): ReadOptions<R, D> {
  const names = namesOf(rules);
  if (options === undefined && settings.required !== true) options = {};
  if (typeof options !== 'object' || options === null || isArray(options)) {
    const example = settings.example ?? `{ ${names[0]}: … }`;
    const orLeftOut = settings.required === true ? '' : ', or left out';
    throw refused(`${owner} options`, `an object such as ${example}${orLeftOut}`, options);
  }
  const given = readGiven(options, owner, names);
  const defaults = (settings.defaults ?? {}) as Record<string, unknown>;
  const read: Record<string, unknown> = {};
  for (let i = 0; i < names.length; i++) {
    const name = names[i] as string;
    const value = given[i];
    read[name] =
      value === undefined ? defaults[name] : checkValue(rules[name] as Rule<unknown>, value, name);
  }
  return read as ReadOptions<R, D>;
}

// The names of a set of rules, listed once: a factory reads its options on every call.
const ruleNames = new WeakMap<Rules, readonly string[]>();

function namesOf(rules: Rules): readonly string[] {
  let names = ruleNames.get(rules);
  if (names === undefined) {
    names = Object.keys(rules);
    ruleNames.set(rules, names);
  }
  return names;
}

/** The known keys' values in the order of `names`, each read once; an unknown own key is refused. */
function readGiven(options: object, owner: string, names: readonly string[]): unknown[] {
  const given: unknown[] = new Array(names.length);
  let keys: string[];
  try {
    keys = Object.keys(options);
    for (let i = 0; i < names.length; i++) {
      given[i] = (options as Record<string, unknown>)[names[i] as string];
    }
  } catch (cause) {
    throw unreadable(`${owner} options`, 'plain data', options, cause);
  }
  for (const key of keys) {
    if (!names.includes(key)) throw unknownOption(owner, key, names);
  }
  return given;
}

function unknownOption(owner: string, key: string, names: readonly string[]): ConfigurationError {
  // The first characters are enough to find the nearest of short names.
  const nearest = nearestName(key.slice(0, 64), names) ?? names[0];
  return new ConfigurationError(
    'invalid_option',
    `${owner} has no option ${describe(key)}; did you mean "${nearest}"? Its options are ${names.join(', ')}.`,
  );
}

/**
 * The error for a refused value, in the one wording: "`name` must be `expected`, got `value`."
 * (the value as {@link describe} shows it). For a refusal no rule can word: a value refused for
 * what another option says, a value a callback returned.
 * @param name - what the value is (e.g. `maxKeys`, `clock.now()`)
 * @param expected - what it must be, finishing "`name` must be …"
 * @param value - the value refused
 * @param code - the error's code @defaultValue `invalid_option`
 * @param cause - what was thrown in finding the value wrong, when something was
 */
export function refused(
  name: string,
  expected: string,
  value: unknown,
  code?: ConfigurationErrorCode,
  cause?: unknown,
): ConfigurationError {
  return mustBe(name, expected, describe(value), code, cause);
}

/**
 * The error for a value whose reading threw (a getter, a proxy): "`name` must be `expected`, got
 * `value` that threw when read.", with what was thrown as its cause.
 * @param name - what was being read (e.g. `createLimiter options`, `store`)
 * @param expected - what it must be (e.g. `plain data`)
 * @param value - the object whose reading threw
 * @param cause - what the reading threw
 * @param code - the error's code @defaultValue `invalid_option`
 */
export function unreadable(
  name: string,
  expected: string,
  value: unknown,
  cause: unknown,
  code?: ConfigurationErrorCode,
): ConfigurationError {
  return mustBe(name, expected, `${describe(value)} that threw when read`, code, cause);
}

/**
 * The error for options whose keys do not go together: "`name` must be an object with
 * `expected`, got one with `given`." (`neither` when none of them is given).
 * @param name - the options (e.g. `createLimiter options`)
 * @param expected - the keys that must be given (e.g. `exactly one of preset and policies`)
 * @param given - the keys among them that were given
 * @param code - the error's code @defaultValue `invalid_option`
 */
export function conflictingKeys(
  name: string,
  expected: string,
  given: readonly string[],
  code?: ConfigurationErrorCode,
): ConfigurationError {
  const got = given.length === 0 ? 'neither' : given.join(' and ');
  return mustBe(name, `an object with ${expected}`, `one with ${got}`, code);
}

/**
 * The one wording: "`name` must be `expected`, got `got`.", with the value already shown as `got`
 * (for a value that must not be shown by `describe`, such as a secret shown by its size).
 * @param code - the error's code @defaultValue `invalid_option`
 */
export function mustBe(
  name: string,
  expected: string,
  got: string,
  code: ConfigurationErrorCode = 'invalid_option',
  cause?: unknown,
): ConfigurationError {
  const message = `${name} must be ${expected}, got ${got}.`;
  return new ConfigurationError(code, message, cause === undefined ? undefined : { cause });
}

/**
 * One value checked by a rule (`undefined` too), in the one wording.
 * @param name - what the value is, for the message (e.g. `maxKeys`, `FakeClock start`)
 */
export function checkValue<T>(rule: Rule<T>, value: unknown, name: string): T {
  const read = value === undefined ? INVALID : rule.read(value, name);
  if (read === INVALID) throw invalidValue(rule, value, name);
  return read;
}

/** The error for a value a rule refuses: "`name` must be `expected`, got `value`.". */
export function invalidValue(
  rule: Rule<unknown>,
  value: unknown,
  name: string,
): ConfigurationError {
  return refused(name, rule.expected, value, rule.code);
}

/** A rule with another wording or code; the reading stays. */
export function worded<T>(rule: Rule<T>, expected: string, code?: ConfigurationErrorCode): Rule<T> {
  return { expected, code: code ?? rule.code, read: (value, name) => rule.read(value, name) };
}

/** A rule that refuses nothing but `undefined` (an object handed through, checked elsewhere). */
export function anything(expected = 'given'): Rule<unknown> {
  return { expected, read: (value) => value };
}

/**
 * A whole number in a range.
 * @param min - the least value @defaultValue 1
 * @param max - the greatest @defaultValue `Number.MAX_SAFE_INTEGER`
 */
export function wholeNumber(min = 1, max = Number.MAX_SAFE_INTEGER): Rule<number> {
  const upper = max === Number.MAX_SAFE_INTEGER ? `${max} (Number.MAX_SAFE_INTEGER)` : `${max}`;
  return {
    expected: `a whole number from ${min} to ${upper}`,
    read: (value) =>
      Number.isSafeInteger(value) && (value as number) >= min && (value as number) <= max
        ? (value as number)
        : INVALID,
  };
}

/**
 * A finite number in a range.
 * @param min - the least value
 * @param max - the greatest
 */
export function finiteNumber(min: number, max = Number.MAX_VALUE): Rule<number> {
  const upper = max === Number.MAX_VALUE ? '' : ` to ${max}`;
  return {
    expected: upper === '' ? `a finite number >= ${min}` : `a number from ${min}${upper}`,
    read: (value) =>
      typeof value === 'number' && Number.isFinite(value) && value >= min && value <= max
        ? value
        : INVALID,
  };
}

/** `true` or `false`. */
export const aBoolean: Rule<boolean> = {
  expected: 'true or false',
  read: (value) => (typeof value === 'boolean' ? value : INVALID),
};

/**
 * A function.
 * @param what - what it does, finishing "a function that …" (e.g. `returns milliseconds`)
 */
export function aFunction<F extends (...args: never[]) => unknown>(what: string): Rule<F> {
  return {
    expected: `a function that ${what}`,
    read: (value) => (typeof value === 'function' ? (value as F) : INVALID),
  };
}

/**
 * One of a few strings (or other primitives).
 * @param values - the accepted values
 */
export function oneOf<const V extends readonly (string | number | boolean)[]>(
  ...values: V
): Rule<V[number]> {
  return {
    expected: `one of ${values.map((v) => JSON.stringify(v)).join(', ')}`,
    read: (value) => (values.includes(value as V[number]) ? (value as V[number]) : INVALID),
  };
}

/**
 * A string of bounded length.
 * @param maxLength - the most UTF-16 code units @defaultValue 1024
 * @param minLength - the fewest @defaultValue 1
 */
export function aString(maxLength = 1024, minLength = 1): Rule<string> {
  return {
    expected:
      minLength === 1
        ? `a non-empty string of at most ${maxLength} characters`
        : `a string of ${minLength} to ${maxLength} characters`,
    read: (value) =>
      typeof value === 'string' && value.length >= minLength && value.length <= maxLength
        ? value
        : INVALID,
  };
}

/**
 * An object with the named methods, each read once: the object as given.
 * @param methods - the members that must be functions
 * @param what - what the object is, for the message (e.g. `a LimitStore`)
 */
export function withMethods<T extends object>(methods: readonly string[], what: string): Rule<T> {
  const expected = `${what} with ${methods.map((m) => `${m}()`).join(' and ')}`;
  return {
    expected,
    read(value, name) {
      if ((typeof value !== 'object' && typeof value !== 'function') || value === null) {
        return INVALID;
      }
      for (const method of methods) {
        let member: unknown;
        try {
          member = (value as Record<string, unknown>)[method];
        } catch (cause) {
          throw unreadable(name, expected, value, cause);
        }
        if (typeof member !== 'function') return INVALID;
      }
      return value as T;
    },
  };
}

/** The most elements a list option may hold: far more than any configuration needs. */
export const MAX_LIST_LENGTH = 1 << 20;

/**
 * A list, each element read once into an array of the caller's own and checked by `item`.
 * @param item - the rule of each element
 * @param minLength - the fewest elements @defaultValue 0
 */
export function listOf<T>(item: Rule<T>, minLength = 0): Rule<T[]> {
  const least = minLength === 0 ? '' : ` of at least ${minLength}`;
  const rule: Rule<T[]> = {
    expected: `an array${least} of ${item.expected.replace(/^an? /, '')}s`,
    code: item.code,
    read(value, name) {
      if (!isArray(value)) return INVALID;
      let elements: unknown[];
      try {
        const { length } = value;
        if (length > MAX_LIST_LENGTH) {
          throw refused(`${name}.length`, `at most ${MAX_LIST_LENGTH}`, length, item.code);
        }
        elements = Array.from({ length }, (_, index) => value[index]);
      } catch (cause) {
        if (cause instanceof ConfigurationError) throw cause;
        throw unreadable(name, rule.expected, value, cause, item.code);
      }
      if (elements.length < minLength) return INVALID;
      return elements.map((element, index) => checkValue(item, element, `${name}[${index}]`));
    },
  };
  return rule;
}

/**
 * An object whose named fields are read once each into a record of the caller's own (unknown
 * fields are left alone: the object is data, not options).
 * @param keys - the fields to read
 * @param expected - what the object is, for the message (e.g. `an object with a route`)
 * @param code - the error code of a refusal or a read that throws @defaultValue `invalid_option`
 */
export function withFields<K extends string>(
  keys: readonly K[],
  expected: string,
  code?: ConfigurationErrorCode,
): Rule<Readonly<Record<K, unknown>>> {
  return {
    expected,
    code,
    read(value, name) {
      if (typeof value !== 'object' || value === null) return INVALID;
      const fields = {} as Record<K, unknown>;
      try {
        for (const key of keys) fields[key] = (value as Record<K, unknown>)[key];
      } catch (cause) {
        throw unreadable(name, expected, value, cause, code);
      }
      return fields;
    },
  };
}

/**
 * An object of options of its own, read by `rules` as {@link readOptions} reads (each key once,
 * unknown keys refused); its values are named `name.key` in messages (e.g. `anonymous.key`).
 * @param rules - one rule per known key
 * @param example - an example of the object, for messages (e.g. `{ key: (req) => req.ip }`)
 */
export function optionsOf<R extends Rules>(
  rules: R,
  example: string,
): Rule<ReadOptions<R, Record<never, never>>> {
  return {
    expected: `an object such as ${example}`,
    read(value, name) {
      if (typeof value !== 'object' || value === null || isArray(value)) return INVALID;
      const named: Record<string, Rule<unknown>> = {};
      for (const [key, rule] of Object.entries(rules)) {
        named[key] = { ...rule, read: (v) => checkValue(rule, v, `${name}.${key}`) };
      }
      return readOptions(value, name, named, { required: true, example }) as ReadOptions<
        R,
        Record<never, never>
      >;
    },
  };
}

/**
 * The value of an option that must be given: the rule's refusal of `undefined` when it is not.
 * @param rule - the option's rule
 * @param value - the option as read
 * @param name - the option's name
 */
export function requiredValue<T>(rule: Rule<T>, value: T | undefined, name: string): T {
  return value === undefined ? checkValue(rule, value, name) : value;
}
