/** Tests of route pattern parsing: the canonical form, and errors that point at the character. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isConfigurationError, parseRoutePattern } from '../../src/index.js';
import { canonicalPattern, patternPartsArb, spellingArb, spellPattern } from '../support/routes.js';

function thrown(action: () => unknown): unknown {
  try {
    action();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

describe('parseRoutePattern', () => {
  it('gives every spelling of a pattern one canonical form (case, escapes, V*)', () => {
    fc.assert(
      fc.property(patternPartsArb, spellingArb, ({ method, parts }, choices) => {
        const pattern = parseRoutePattern(spellPattern(method, parts, choices));
        expect(pattern.canonical).toBe(canonicalPattern(method, parts));
        expect(pattern.method).toBe(method);
        expect(pattern.segments.map((s) => s.kind)).toEqual(parts.map((p) => p.kind));
      }),
    );
  });

  it('is idempotent: a canonical pattern parses to itself', () => {
    fc.assert(
      fc.property(patternPartsArb, spellingArb, ({ method, parts }, choices) => {
        const once = parseRoutePattern(spellPattern(method, parts, choices)).canonical;
        expect(parseRoutePattern(once).canonical).toBe(once);
      }),
    );
  });

  it('reads the specification’s patterns', () => {
    const pattern = parseRoutePattern('PUT /rateplan/v*/rate-plans/{id}/rates');
    expect(pattern).toEqual({
      source: 'PUT /rateplan/v*/rate-plans/{id}/rates',
      method: 'PUT',
      segments: [
        { kind: 'literal', text: 'rateplan', spelled: 'rateplan' },
        { kind: 'version' },
        { kind: 'literal', text: 'rate-plans', spelled: 'rate-plans' },
        { kind: 'param', name: 'id' },
        { kind: 'literal', text: 'rates', spelled: 'rates' },
      ],
      params: ['id'],
      canonical: 'PUT /rateplan/v*/rate-plans/{id}/rates',
    });
    expect(parseRoutePattern('* /').canonical).toBe('* /');
    // A literal keeps its spelling (case, escapes made canonical) next to its folded text.
    expect(parseRoutePattern('GET /Rate%2dPlans%3a').segments[0]).toEqual({
      kind: 'literal',
      text: 'rate-plans%3A',
      spelled: 'Rate-Plans%3A',
    });
    expect(parseRoutePattern('get /A%7eb/%2f/x:y').canonical).toBe('GET /a~b/%2F/x%3Ay');
  });

  const bad: [route: string, column: number, reason: string][] = [
    ['', 1, 'expected a method'],
    [' GET /a', 1, 'expected a method'],
    ['G3T /a', 2, 'letters only'],
    ['GET', 4, 'one space and a path'],
    ['GET  /a', 5, 'must start with /'],
    ['GET a', 5, 'must start with /'],
    ['GET /a/', 7, 'trailing slash'],
    ['GET /a//b', 8, 'empty segment'],
    ['PATCH /booking/v*/bo{id}', 21, 'whole segment'],
    ['GET /a/{id', 11, 'ends with }'],
    ['GET /a/{1d}', 9, 'starts with a letter'],
    ['GET /a/{}', 9, 'starts with a letter'],
    ['GET /a/{id}x', 12, 'whole segment'],
    ['GET /{id}/{id}', 12, 'appears twice'],
    ['GET /{__proto__}', 7, 'reserved'],
    ['GET /a/v*x', 10, 'v* takes a whole segment'],
    ['GET /a*', 7, 'only allowed in the version segment'],
    ['GET /a?x=1', 7, 'no query string'],
    ['GET /a#x', 7, 'no query string'],
    ['GET /a b', 7, 'no spaces'],
    ['GET /a%', 7, 'percent-encoding'],
    ['GET /a%2', 7, 'percent-encoding'],
    ['GET /a%zz', 7, 'percent-encoding'],
    ['GET /a\\b', 7, 'not allowed'],
    ['GET /a/é', 8, 'not allowed'],
    ['GET /a/\u0000', 8, 'U+0000'],
    ['GET /a/./b', 8, 'can never match'],
    ['GET /a/%2E%2e', 8, 'can never match'],
    ['GET /a/%00', 8, 'can never match'],
  ];

  it.each(bad)('refuses %j at column %i (%s) with a caret under it', (route, column, reason) => {
    const error = thrown(() => parseRoutePattern(route));
    expect(isConfigurationError(error)).toBe(true);
    const { code, message } = error as { code: string; message: string };
    expect(code).toBe('invalid_route_pattern');
    expect(message).toContain(`column ${column}:`);
    expect(message).toContain(reason);
    const lines = message.split('\n');
    expect(lines[1]).toBe(`  ${route.replaceAll('\u0000', '?')}`);
    expect(lines[2]).toBe(`  ${' '.repeat(column - 1)}^`);
  });

  it('refuses a route that is not a string', () => {
    const error = thrown(() => parseRoutePattern(42 as unknown as string));
    expect(isConfigurationError(error) && error.code === 'invalid_route_pattern').toBe(true);
  });
});
