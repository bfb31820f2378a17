/**
 * The specification's tables, read from a verbatim copy of its "Throttling" and "Per-resource
 * limits" sections, side by side with the data, row by row.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  compileRoutes,
  developmentResourceLimits,
  liveResourceLimits,
  liveThrottleExemptRoutes,
  parseRoutePattern,
} from '../../src/index.js';

const spec = readFileSync(new URL('../fixtures/spec-limits.txt', import.meta.url), 'utf8');

// The rows of the markdown table that follows the line starting with `heading`.
function tableAfter(heading: string): { route: string; limit: number; periodMs: number }[] {
  const lines = spec.split('\n');
  const start = lines.findIndex((line) => line.startsWith(heading));
  expect(start).toBeGreaterThanOrEqual(0);
  const rows: string[][] = [];
  for (const line of lines.slice(start + 1)) {
    if (line.startsWith('|'))
      rows.push(
        line
          .split('|')
          .slice(1, -1)
          .map((cell) => cell.trim()),
      );
    else if (rows.length > 0) break;
  }
  expect(rows[0]).toEqual(['Endpoint', 'Limit (requests)', 'Period']);
  expect(rows[1]?.every((cell) => /^-+$/.test(cell))).toBe(true);
  return rows.slice(2).map(([route, limit, period]) => {
    const minutes = /^(\d+) min$/.exec(period ?? '');
    expect(minutes).not.toBeNull();
    return { route: route!, limit: Number(limit), periodMs: Number(minutes![1]) * 60_000 };
  });
}

describe('resource tables', () => {
  it('Live per-resource limits equal the specification’s table, row by row', () => {
    const table = tableAfter('Live accounts:');
    expect(table).toHaveLength(5);
    for (const [k, row] of table.entries()) expect(liveResourceLimits[k]).toEqual(row);
    expect(liveResourceLimits).toHaveLength(table.length);
  });

  it('Development and Trial per-resource limits equal the specification’s table, row by row', () => {
    const table = tableAfter('Development and Trial accounts:');
    expect(table).toHaveLength(5);
    for (const [k, row] of table.entries()) expect(developmentResourceLimits[k]).toEqual(row);
    expect(developmentResourceLimits).toHaveLength(table.length);
  });

  it('the Live throttle exemptions equal the specification’s list, in order', () => {
    const item = spec.split('\n').find((line) => line.includes('throttling does not apply'));
    const routes = [...(item ?? '').matchAll(/`([^`]+)`/g)].map((m) => m[1]);
    expect(routes).toHaveLength(5);
    expect([...liveThrottleExemptRoutes]).toEqual(routes);
  });

  it('every route in the tables is a valid pattern, already in canonical spelling', () => {
    const routes = [
      ...liveResourceLimits.map((row) => row.route),
      ...developmentResourceLimits.map((row) => row.route),
      ...liveThrottleExemptRoutes,
    ];
    for (const route of routes) expect(parseRoutePattern(route).canonical).toBe(route);
    expect(() => compileRoutes(routes.map((route) => ({ route })))).not.toThrow();
  });

  it('is frozen, so a preset cannot be changed by accident', () => {
    expect(Object.isFrozen(liveResourceLimits)).toBe(true);
    expect(Object.isFrozen(liveResourceLimits[0])).toBe(true);
    expect(Object.isFrozen(developmentResourceLimits)).toBe(true);
    expect(Object.isFrozen(liveThrottleExemptRoutes)).toBe(true);
  });
});
