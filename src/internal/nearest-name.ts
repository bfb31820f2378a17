/** The nearest known name to a misspelt one, for "did you mean". @module */

/**
 * The candidate closest to `name` by Levenshtein distance (insertions, deletions, substitutions);
 * the first of equals wins, so suggestions are stable.
 * @param name - the unknown name
 * @param candidates - the known names
 * @returns the nearest candidate, or undefined when there is none
 */
export function nearestName(name: string, candidates: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of candidates) {
    const distance = editDistance(name, candidate);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/**
 * The Levenshtein distance between two strings, in one row of memory.
 * @param a - first string
 * @param b - second string
 */
export function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j]!;
      const cost = a.charCodeAt(i - 1) === b.charCodeAt(j - 1) ? 0 : 1;
      row[j] = Math.min(above + 1, row[j - 1]! + 1, diagonal + cost);
      diagonal = above;
    }
  }
  return row[b.length]!;
}
