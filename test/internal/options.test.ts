import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isConfigurationError } from '../../src/errors/index.js';
import {
  aBoolean,
  aFunction,
  aString,
  checkValue,
  conflictingKeys,
  finiteNumber,
  listOf,
  MAX_LIST_LENGTH,
  oneOf,
  optionsOf,
  readOptions,
  refused,
  requiredValue,
  unreadable,
  wholeNumber,
  withFields,
  withMethods,
} from '../../src/internal/options.js';

const rules = { maxKeys: wholeNumber(1, 100), mode: oneOf('open', 'closed'), log: aBoolean };

function message(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(isConfigurationError(error)).toBe(true);
    return (error as Error).message;
  }
  throw new Error('expected a ConfigurationError');
}

describe('readOptions', () => {
  it('applies the defaults for keys left out or undefined, and checks the rest', () => {
    const read = readOptions({ mode: 'closed', log: undefined }, 'make', rules, {
      defaults: { maxKeys: 10, log: false },
    });
    expect(read).toEqual({ maxKeys: 10, mode: 'closed', log: false });
  });

  it('reads left-out options as no options unless they are required', () => {
    expect(readOptions(undefined, 'make', rules)).toEqual({
      maxKeys: undefined,
      mode: undefined,
      log: undefined,
    });
    expect(message(() => readOptions(undefined, 'make', rules, { required: true }))).toBe(
      'make options must be an object such as { maxKeys: … }, got undefined.',
    );
  });

  it('refuses options that are not a plain object', () => {
    for (const bad of [null, 1, 'x', [], () => 1]) {
      expect(message(() => readOptions(bad, 'make', rules))).toMatch(
        /^make options must be an object such as \{ maxKeys: … \}, or left out, got /,
      );
    }
  });

  it('refuses an unknown key with the nearest known name', () => {
    expect(message(() => readOptions({ maxKey: 1 }, 'make', rules))).toBe(
      'make has no option "maxKey"; did you mean "maxKeys"? Its options are maxKeys, mode, log.',
    );
  });

  it('words every refused value the same way', () => {
    expect(message(() => readOptions({ maxKeys: 0 }, 'make', rules))).toBe(
      'maxKeys must be a whole number from 1 to 100, got 0.',
    );
    expect(message(() => readOptions({ mode: 'half' }, 'make', rules))).toBe(
      'mode must be one of "open", "closed", got "half".',
    );
  });

  it('reads each key once, so a getter cannot answer two values', () => {
    let reads = 0;
    const options = {
      get maxKeys() {
        reads += 1;
        return reads === 1 ? 5 : 0;
      },
    };
    expect(readOptions(options, 'make', rules).maxKeys).toBe(5);
    expect(reads).toBe(1);
  });

  it('turns a read that throws into a ConfigurationError', () => {
    const options = {
      get maxKeys(): number {
        throw new Error('boom');
      },
    };
    expect(message(() => readOptions(options, 'make', rules))).toBe(
      'make options must be plain data, got an object that threw when read.',
    );
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    expect(message(() => readOptions(proxy, 'make', rules))).toBe(
      'make options must be plain data, got an object that threw when read.',
    );
  });

  it('never throws anything but a ConfigurationError, whatever the options', () => {
    fc.assert(
      fc.property(fc.anything(), (options) => {
        try {
          readOptions(options, 'make', rules);
        } catch (error) {
          expect(isConfigurationError(error)).toBe(true);
        }
      }),
    );
  });
});

describe('rules', () => {
  it('wholeNumber takes whole numbers in its range only', () => {
    const rule = wholeNumber(0, 3);
    expect(checkValue(rule, 3, 'n')).toBe(3);
    for (const bad of [-1, 4, 1.5, Number.NaN, '1', undefined]) {
      expect(() => checkValue(rule, bad, 'n')).toThrow('n must be a whole number from 0 to 3');
    }
  });

  it('finiteNumber, aString, aFunction', () => {
    expect(() => checkValue(finiteNumber(0), Number.POSITIVE_INFINITY, 'x')).toThrow(
      'x must be a finite number >= 0, got Infinity.',
    );
    expect(checkValue(aString(3), 'abc', 's')).toBe('abc');
    expect(() => checkValue(aString(3), 'abcd', 's')).toThrow(
      's must be a non-empty string of at most 3 characters',
    );
    expect(() => checkValue(aFunction('returns ms'), {}, 'now')).toThrow(
      'now must be a function that returns ms, got an object.',
    );
  });

  it('withMethods reads each method once and refuses a missing one', () => {
    const rule = withMethods(['apply', 'release'], 'a LimitStore');
    const store = { apply() {}, release() {} };
    expect(checkValue(rule, store, 'store')).toBe(store);
    expect(() => checkValue(rule, { apply() {} }, 'store')).toThrow(
      'store must be a LimitStore with apply() and release(), got an object.',
    );
  });

  it('listOf copies the list and names the element that is wrong', () => {
    const rule = listOf(wholeNumber(), 1);
    const given = [1, 2];
    const read = checkValue(rule, given, 'sizes');
    expect(read).toEqual([1, 2]);
    expect(read).not.toBe(given);
    expect(() => checkValue(rule, [1, 0], 'sizes')).toThrow('sizes[1] must be a whole number');
    expect(() => checkValue(rule, [], 'sizes')).toThrow('sizes must be an array of at least 1');
  });

  it('withFields reads each named field once into a record of its own, and refuses a non-object', () => {
    const rule = withFields(['route', 'limit'], 'a row', 'invalid_route_rule');
    let reads = 0;
    const row = {
      get route() {
        reads++;
        return 'GET /a';
      },
      limit: 5,
      extra: true,
    };
    expect(checkValue(rule, row, 'rows[0]')).toEqual({ route: 'GET /a', limit: 5 });
    expect(reads).toBe(1);
    const refused = thrownBy(() => checkValue(rule, 5, 'rows[0]'));
    expect(refused).toMatchObject({
      code: 'invalid_route_rule',
      message: 'rows[0] must be a row, got 5.',
    });
    const throwing = thrownBy(() =>
      checkValue(
        rule,
        {
          get route() {
            throw new Error('boom');
          },
        },
        'rows[0]',
      ),
    );
    expect(isConfigurationError(throwing)).toBe(true);
    expect(throwing).toMatchObject({
      code: 'invalid_route_rule',
      message: 'rows[0] must be a row, got an object that threw when read.',
    });
  });
});

function thrownBy(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}
describe('optionsOf', () => {
  const nested = { inner: optionsOf({ size: wholeNumber(1, 9), log: aBoolean }, '{ size: 3 }') };

  it('reads a nested object by its rules, its values named after the outer key', () => {
    expect(readOptions({ inner: { size: 3 } }, 'make', nested).inner).toEqual({
      size: 3,
      log: undefined,
    });
    expect(message(() => readOptions({ inner: { size: 0 } }, 'make', nested))).toBe(
      'inner.size must be a whole number from 1 to 9, got 0.',
    );
  });

  it('refuses a value that is not an object, and an unknown key with the nearest name', () => {
    expect(message(() => readOptions({ inner: 'big' }, 'make', nested))).toBe(
      'inner must be an object such as { size: 3 }, got "big".',
    );
    expect(message(() => readOptions({ inner: { sise: 3 } }, 'make', nested))).toBe(
      'inner has no option "sise"; did you mean "size"? Its options are size, log.',
    );
  });
});

describe('optionsOf, given what no options object is', () => {
  const nested = { inner: optionsOf({ size: wholeNumber(1, 9), log: aBoolean }, '{ size: 3 }') };
  const { proxy: revoked, revoke } = Proxy.revocable({}, {});
  revoke();

  it.each<[string, unknown, string]>([
    ['an array', [3], 'inner must be an object such as { size: 3 }, got an array.'],
    ['a string', 'size=3', 'inner must be an object such as { size: 3 }, got "size=3".'],
    ['NaN', Number.NaN, 'inner must be an object such as { size: 3 }, got NaN.'],
    ['null', null, 'inner must be an object such as { size: 3 }, got null.'],
    [
      'a misspelt key beside a right one',
      { size: 3, lgo: true },
      'inner has no option "lgo"; did you mean "log"? Its options are size, log.',
    ],
    [
      'NaN for a value',
      { size: Number.NaN },
      'inner.size must be a whole number from 1 to 9, got NaN.',
    ],
    [
      'a getter that throws',
      {
        get size(): number {
          throw new Error('boom');
        },
      },
      'inner options must be plain data, got an object that threw when read.',
    ],
    [
      'a proxy whose keys throw',
      new Proxy(
        {},
        {
          ownKeys() {
            throw new Error('boom');
          },
        },
      ),
      'inner options must be plain data, got an object that threw when read.',
    ],
    [
      'a revoked proxy',
      revoked,
      'inner options must be plain data, got an object that threw when read.',
    ],
  ])('refuses %s in the one wording', (_, inner, expected) => {
    expect(message(() => readOptions({ inner }, 'make', nested))).toBe(expected);
  });

  it('reads a proxy that answers plainly as the object it stands for', () => {
    const inner = new Proxy({ size: 4 }, {});
    expect(readOptions({ inner }, 'make', nested).inner).toEqual({ size: 4, log: undefined });
  });
});

describe('the refusals a rule cannot word', () => {
  it('refused words a value as every rule does, with the code and cause given', () => {
    const cause = new Error('boom');
    expect(refused('clock.now()', 'finite milliseconds', Number.NaN)).toMatchObject({
      name: 'ConfigurationError',
      code: 'invalid_option',
      message: 'clock.now() must be finite milliseconds, got NaN.',
    });
    const error = refused('cost', 'at most 5', 7, 'cost_above_limit', cause);
    expect(error).toMatchObject({
      code: 'cost_above_limit',
      message: 'cost must be at most 5, got 7.',
    });
    expect(error.cause).toBe(cause);
    expect(refused('name', 'a string', 'x'.repeat(100)).message).toBe(
      `name must be a string, got "${'x'.repeat(64)}…".`,
    );
  });

  it('unreadable says the value threw when read, and keeps what it threw', () => {
    const cause = new Error('boom');
    const error = unreadable('store', 'a LimitStore', {}, cause, 'invalid_policy');
    expect(error).toMatchObject({
      code: 'invalid_policy',
      message: 'store must be a LimitStore, got an object that threw when read.',
    });
    expect(error.cause).toBe(cause);
  });

  it('conflictingKeys names the keys given together, or neither', () => {
    expect(conflictingKeys('make options', 'exactly one of a and b', []).message).toBe(
      'make options must be an object with exactly one of a and b, got one with neither.',
    );
    expect(
      conflictingKeys('make options', 'at most one of a and b', ['a', 'b'], 'invalid_override'),
    ).toMatchObject({
      code: 'invalid_override',
      message: 'make options must be an object with at most one of a and b, got one with a and b.',
    });
  });

  it('withMethods and listOf word a read that throws, and a list too long to copy', () => {
    const store = {
      get apply(): never {
        throw new Error('boom');
      },
    };
    expect(message(() => checkValue(withMethods(['apply'], 'a LimitStore'), store, 'store'))).toBe(
      'store must be a LimitStore with apply(), got an object that threw when read.',
    );
    const long = new Proxy([], {
      get: (target, key) => (key === 'length' ? MAX_LIST_LENGTH + 1 : Reflect.get(target, key)),
    });
    expect(message(() => checkValue(listOf(wholeNumber()), long, 'sizes'))).toBe(
      `sizes.length must be at most ${MAX_LIST_LENGTH}, got ${MAX_LIST_LENGTH + 1}.`,
    );
    const throwing = new Proxy([], {
      get(target, key) {
        if (key === 'length') throw new Error('boom');
        return Reflect.get(target, key);
      },
    });
    const sizes = listOf({ expected: 'a size', read: (value) => value });
    expect(message(() => checkValue(sizes, throwing, 'sizes'))).toBe(
      'sizes must be an array of sizes, got an array that threw when read.',
    );
  });
});

describe('requiredValue', () => {
  it('answers a value given, and refuses one left out in the one wording', () => {
    expect(requiredValue(aBoolean, false, 'log')).toBe(false);
    expect(message(() => requiredValue(aBoolean, undefined, 'log'))).toBe(
      'log must be true or false, got undefined.',
    );
  });
});
