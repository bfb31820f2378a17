/**
 * Waiting in a test for what another process, a socket or a timer makes true: poll until it holds.
 * The one limit is a guard against what never comes, far above any real wait and below the test's
 * own timeout, so that a loaded machine slows a test down but never fails it. How fast things
 * happen is measured in bench/, never asserted by a test.
 */

/** How long a wait goes on before it fails as never coming: below vitest's 60 s test timeout. */
export const GUARD_MS = 45_000;

/**
 * Poll `check` until it gives something other than `undefined` or `false`, and answer that.
 * @param what - what is waited for, for the failure's message
 * @param check - read afresh at each poll; may be asynchronous
 * @param pollMs - the pause between polls @defaultValue 5
 * @throws Error naming `what` when {@link GUARD_MS} pass without it
 */
export async function eventually<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  pollMs = 5,
): Promise<T> {
  const guard = Date.now() + GUARD_MS;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > guard) throw new Error(`never came within ${GUARD_MS} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}
