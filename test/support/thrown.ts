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
