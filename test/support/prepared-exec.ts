/**
 * What a PGlite `exec` call runs when the repository sends a prepared statement: it prepares each
 * text once (`PREPARE name AS text`) and runs it with `EXECUTE name(literals)`, each parameter a
 * quoted literal (`E'…'`; an array in its text form, `{…}`) or NULL. Tests that watch the
 * statements PGlite runs read them through this.
 */

/** The statements prepared through one database's `exec`, by name. */
export class PreparedTexts {
  readonly #texts = new Map<string, string>();

  /**
   * Note a `PREPARE`, and tell the statement text an `EXECUTE` runs, with its parameters as
   * strings (`null` for NULL); `undefined` for any other text.
   */
  read(text: string): { statement: string; params: (string | null)[] } | undefined {
    const prepare = /^PREPARE (\w+) AS ([\s\S]*)$/.exec(text);
    if (prepare !== null) this.#texts.set(prepare[1] ?? '', prepare[2] ?? '');
    const execute = /^EXECUTE (\w+)(?:\(([\s\S]*)\))?$/.exec(text);
    const statement = execute === null ? undefined : this.#texts.get(execute[1] ?? '');
    if (statement === undefined) return undefined;
    const params = [...(execute?.[2] ?? '').matchAll(/E?'((?:[^']|'')*)'|NULL/g)].map((m) =>
      m[1] === undefined ? null : m[1].replaceAll("''", "'").replaceAll('\\\\', '\\'),
    );
    return { statement, params };
  }
}

/**
 * The elements of a parameter that is a flat array in PostgreSQL's text form (`{"a","b",NULL}`),
 * each string unquoted (`null` for NULL); `undefined` for a parameter that is not an array.
 */
export function arrayElements(param: string | null): (string | null)[] | undefined {
  if (param === null || !param.startsWith('{') || !param.endsWith('}')) return undefined;
  const inner = param.slice(1, -1);
  if (inner === '') return [];
  return [...inner.matchAll(/"((?:[^"\\]|\\.)*)"|([^,]+)/g)].map((m) =>
    m[1] !== undefined ? m[1].replaceAll(/\\(.)/g, '$1') : m[2] === 'NULL' ? null : (m[2] ?? ''),
  );
}
