/**
 * Steps that answer a value or a promise of one (a memory store answers at once, Redis later):
 * the next step runs at once on a value and after the promise on a promise.
 * @module
 */

/** A value now, or a promise of one. */
export type MaybePromise<T> = T | Promise<T>;

/**
 * True for anything with a callable `then`. Reading `then` runs user code (a getter, a Proxy),
 * so a caller reads it inside its `try`.
 * @param value - any value
 */
export function isThenable<T>(value: unknown): value is PromiseLike<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

/**
 * Run `produce`, then `next` with its value: at once for a value, after the promise for a promise.
 * A throw or a rejection anywhere goes to `failed`, so the answer never throws and never rejects
 * (unless `failed` does). The steps are methods called on `self`, so that a value costs neither a
 * closure nor a promise.
 * @param self - what the steps are called on
 * @param produce - the step that may answer a promise
 * @param next - the step after it
 * @param failed - the step for a throw or a rejection
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
