/** Tests of the path rebuilt from a matched route and its parameters (the Fastify plugin's `keyBy: 'route'`). */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { filledRoutePath } from '../../src/limits/route-path.js';

const literalArb = fc.stringMatching(/^[A-Za-z0-9._~-]{0,8}$/);
const nameArb = fc.stringMatching(/^[A-Za-z0-9_]{1,6}$/);
const segmentsArb = fc.array(
  fc.oneof(
    literalArb.map((literal) => ({ literal })),
    nameArb.map((param) => ({ param })),
  ),
  { maxLength: 6 },
);

describe('filledRoutePath', () => {
  it('fills each :name with its value percent-encoded, and keeps every literal as written', () => {
    fc.assert(
      fc.property(
        segmentsArb,
        fc.dictionary(nameArb, fc.string({ minLength: 1 })),
        (segs, given) => {
          const params: Record<string, string> = { ...given };
          for (const s of segs) if ('param' in s && !(s.param in params)) params[s.param] = 'x';
          const route = `/${segs.map((s) => ('literal' in s ? s.literal : `:${s.param}`)).join('/')}`;
          const path = filledRoutePath(route, params);
          // The oracle: the route's segments, each parameter replaced by its value as a URL sends it.
          const expected = `/${segs.map((s) => ('literal' in s ? s.literal : encodeURIComponent(params[s.param]!))).join('/')}`;
          expect(path).toBe(expected);
        },
      ),
    );
  });

  it('gives up (undefined) where the route cannot be filled in exactly', () => {
    expect(filledRoutePath(undefined, {})).toBeUndefined();
    expect(filledRoutePath('bookings/:id', { id: 'B1' })).toBeUndefined();
    expect(filledRoutePath('/files/*', { '*': 'a/b' })).toBeUndefined();
    expect(filledRoutePath('/bookings/:id(\\d+)', { id: '1' })).toBeUndefined();
    expect(filledRoutePath('/a%2Fb/:id', { id: '1' })).toBeUndefined();
    expect(filledRoutePath('/bookings/:id', {})).toBeUndefined();
    expect(filledRoutePath('/bookings/:id', { id: '' })).toBeUndefined();
    expect(filledRoutePath('/bookings/:id', { id: 7 })).toBeUndefined();
    expect(filledRoutePath('/bookings/:id', null)).toBeUndefined();
    expect(filledRoutePath('/bookings/:id', { id: 'a b/c' })).toBe('/bookings/a%20b%2Fc');
    expect(filledRoutePath('/', undefined)).toBe('/');
  });
});
