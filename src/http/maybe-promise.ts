/** Steps that answer a value or a promise of one: the memory store answers at once. @module */

/** A value now, or a promise of one. */
export type MaybePromise<T> = T | Promise<T>;

/** True for anything with a callable `then`; reading it runs user code, so call inside a `try`. */
export function isThenable<T>(value: unknown): value is PromiseLike<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

/**
 * Run `produce`, then `next` with its value; any throw or rejection goes to `failed`. Steps are
 * methods called on `self`, so a value costs neither a closure nor a promise.
 */
export function proceed<S, T, V>(
  self: S,
  produce: (this: S) => T | PromiseLike<T>,
  next: (this: S, value: T) => MaybePromise<V>,
  failed: (this: S, error: unknown) => MaybePromise<V>,
): MaybePromise<V> {
  let value: T | PromiseLike<T>;
  try {
    value = produce.call(self);
    if (!isThenable<T>(value)) return next.call(self, value);
  } catch (error) {
    return failed.call(self, error);
  }
  return later(self, value, next, failed);
}

function later<S, T, V>(
  self: S,
  value: PromiseLike<T>,
  next: (this: S, value: T) => MaybePromise<V>,
  failed: (this: S, error: unknown) => MaybePromise<V>,
): Promise<V> {
  const fail = (error: unknown) => failed.call(self, error);
  let promise: Promise<T>;
  try {
    // Promise.resolve reads a native promise's `constructor`, which may be a getter that throws.
    promise = Promise.resolve(value);
  } catch (error) {
    return Promise.resolve(fail(error));
  }
  return promise.then((v) => next.call(self, v), fail).catch(fail);
}
