/**
 * What a call throws, as a value, so that a test can assert on it (for example with
 * `isConfigurationError`).
 */

/**
 * Run `attempt` and return what it threw, or `undefined` when it returned.
 * @param attempt - the call expected to throw
 */
export function thrown(attempt: () => unknown): unknown {
  try {
    attempt();
  } catch (error) {
    return error;
  }
  return undefined;
}

/**
 * A native promise of `value` whose `constructor` is a getter that throws: `Promise.resolve` of it
 * throws, though it is a real promise.
 * @param value - what it resolves to
 */
export function hostilePromise<T>(value: T): Promise<T> {
  const promise = Promise.resolve(value);
  Object.defineProperty(promise, 'constructor', {
    get() {
      throw new Error('constructor getter');
    },
  });
  return promise;
}
