/**
 * The limiter never sees a different route than the framework routes. For random paths and
 * hostile spellings (percent-encoding, backslashes, dot segments, doubled slashes, `;`
 * parameters, Unicode case, `%2F`, absolute-form targets) sent byte for byte over real HTTP, the
 * oracle is the framework itself: whenever it routes a spelling to a handler and ids, the rules
 * and resource keys the limiter reads from the path the adapter hands it are those of the plain
 * spelling of that handler and ids (the route filled in with the ids, percent-encoded), and an
 * exemption applies only where the handler is exempt.
 */
import fc from 'fast-check';
import type { FastifyServerOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileRoutes, liveResourceLimits, liveThrottleExemptRoutes } from '../../src/index.js';
import {
  type AppRoute,
  type Gate,
  type RealApp,
  rawRequest,
  recordingLimiter,
  startExpress,
  startFastify,
  startHono,
  startKoa,
} from '../support/real-routers.js';

// The application: the specification's routes, with `v1` for the version.
const routes: AppRoute[] = [
  { method: 'GET', path: '/booking/v1/offers' },
  { method: 'GET', path: '/booking/v1/rate-plan-offers' },
  { method: 'GET', path: '/booking/v1/reservations/:id' },
  { method: 'GET', path: '/booking/v1/reservations/:id/offers' },
  { method: 'PATCH', path: '/booking/v1/bookings/:id' },
  { method: 'PATCH', path: '/booking/v1/reservations/:id' },
  { method: 'PUT', path: '/rateplan/v1/rate-plans/:id/rates' },
  { method: 'PATCH', path: '/rateplan/v1/rates' },
];
// Which handlers are exempt from the throttle: the specification's list, by hand.
const exemptHandlers = new Set([
  'GET /booking/v1/offers',
  'GET /booking/v1/rate-plan-offers',
  'GET /booking/v1/reservations/:id/offers',
]);

// The rules the limiter applies, as one table: every per-resource row and every exemption.
const table = compileRoutes([
  ...liveResourceLimits,
  ...liveThrottleExemptRoutes.map((route) => ({ route, exempt: true })),
]);
const readAs = (method: string, path: string) => {
  const matches = table.match(method, path);
  return {
    keys: new Set(matches.map((m) => `${m.rule.route} | ${m.key}`)),
    exempts: matches.some((m) => 'exempt' in m.rule && m.plain),
  };
};

/** The plain spelling of a handler and its ids: the route with each id percent-encoded. */
const plainSpelling = (route: string, params: Readonly<Record<string, string>>) =>
  route.replace(/:([a-z]+)/g, (_, name: string) => encodeURIComponent(params[name] ?? ''));

// Spellings.
const hex = (ch: string, lower: boolean) => {
  const bytes = [...new TextEncoder().encode(ch)];
  const text = bytes.map((b) => `%${b.toString(16).padStart(2, '0').toUpperCase()}`).join('');
  return lower ? text.toLowerCase() : text;
};
const charSpelling = fc.constantFrom('raw', 'raw', 'raw', 'upper', 'encoded', 'lowerhex', 'kelvin');
const spellLiteral = (text: string, choices: string[]) =>
  [...text]
    .map((ch, k) => {
      const how = choices[k % choices.length];
      if (how === 'upper') return ch.toUpperCase();
      if (how === 'encoded') return hex(ch, false);
      if (how === 'lowerhex') return hex(ch, true);
      if (how === 'kelvin' && ch === 'k') return k % 2 === 0 ? '%E2%84%AA' : '%e2%84%aa';
      return ch;
    })
    .join('');
const idPiece = fc.constantFrom(
  'B1',
  'r-9',
  'x',
  'K',
  '.',
  '..',
  ';',
  ';v=1',
  '\\',
  '%2F',
  '%2f',
  '%5C',
  '%3B',
  '%25',
  '%41',
  '%2E',
  '%E2%84%AA',
  '%C3%A9',
  ':',
  '@',
  '~',
  "'",
  '(',
);
const idArb = fc.array(idPiece, { minLength: 1, maxLength: 3 }).map((p) => p.join(''));
const separatorArb = fc.constantFrom('/', '/', '/', '/', '//', '\\', '/./', '/%2e/', '/x/../');
// Half of the spellings keep literals and separators plain, so that many reach a handler.
const spellingArb = fc.record({
  route: fc.constantFrom(...routes),
  id: idArb,
  choices: fc.oneof(
    fc.constant<string[]>(['raw']),
    fc.array(charSpelling, { minLength: 1, maxLength: 6 }),
  ),
  separators: fc.oneof(
    fc.constant<string[]>(['/', '/', '/', '/', '/', '/']),
    fc.array(separatorArb, { minLength: 6, maxLength: 6 }),
  ),
  suffix: fc.constantFrom('', '', '/', ';x=1', '?q=1', '#f', '?a\\b'),
  absolute: fc.constantFrom('', '', '', 'http://h', 'http://127.0.0.1:1'),
});
// Random paths too: segments from the routes' words, the id pieces and noise.
const randomPathArb = fc
  .array(
    fc.tuple(
      separatorArb,
      fc.oneof(
        fc.constantFrom('booking', 'rateplan', 'v1', 'V1', 'offers', 'reservations', 'bookings'),
        idArb,
      ),
    ),
    { minLength: 1, maxLength: 6 },
  )
  .map((parts) => parts.map(([sep, seg]) => sep + seg).join(''));
const requestArb = fc.oneof(
  {
    weight: 3,
    arbitrary: spellingArb.map(({ route, id, choices, separators, suffix, absolute }) => {
      const segments = route.path.slice(1).split('/');
      const spelled = segments.map((segment) =>
        segment.startsWith(':') ? id : spellLiteral(segment, choices),
      );
      const path = spelled.map((s, k) => (k === 0 ? `/${s}` : `${separators[k]}${s}`)).join('');
      return { method: route.method as string, target: `${absolute}${path}${suffix}` };
    }),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom('GET', 'PATCH', 'PUT'), randomPathArb)
      .map(([method, target]) => ({ method, target })),
  },
);

type Start = (routes: readonly AppRoute[], gate: Gate) => Promise<RealApp>;
const frameworks: Array<[string, Start]> = [
  ['Express 5', startExpress],
  ['Koa with @koa/router', startKoa],
  ['Hono 4', startHono],
  ['Fastify 5', (r, g) => startFastify(r, g)],
  ['Fastify 5 keyed by the URL', (r, g) => startFastify(r, { ...g, keyBy: 'url' })],
  [
    'Fastify 5 with caseSensitive: false, ignoreTrailingSlash, ignoreDuplicateSlashes, useSemicolonDelimiter',
    (r, g) =>
      startFastify(r, g, {
        routerOptions: {
          caseSensitive: false,
          ignoreTrailingSlash: true,
          ignoreDuplicateSlashes: true,
          // In Fastify's routerOptions at run time, not in its types.
          useSemicolonDelimiter: true,
        } as NonNullable<FastifyServerOptions['routerOptions']>,
      }),
  ],
  [
    'Fastify 5 keyed by the URL, with caseSensitive: false, ignoreTrailingSlash, ignoreDuplicateSlashes',
    (r, g) =>
      startFastify(
        r,
        { ...g, keyBy: 'url' },
        {
          routerOptions: {
            caseSensitive: false,
            ignoreTrailingSlash: true,
            ignoreDuplicateSlashes: true,
          },
        },
      ),
  ],
];

describe.each(frameworks)('%s routes no spelling differently from the limiter', (_, start) => {
  // The paths the adapter hands the limiter, in order, to the real limiter.
  const { limiter, seen } = recordingLimiter();
  let app: RealApp;
  beforeAll(async () => {
    app = await start(routes, { limiter, identity: { clientId: 'c1', accountCode: 'ACME' } });
  });
  afterAll(() => app.close());

  it('whenever it routes a spelling to a handler and ids, the limiter reads the rules and keys of their plain spelling, and exempts only an exempt handler', async () => {
    let routed = 0;
    await fc.assert(
      fc.asyncProperty(requestArb, async ({ method, target }) => {
        const served = app.served.length;
        const checked = seen.length;
        const status = await rawRequest(app.port, method, target).status;
        if (app.served.length === served) {
          // Not routed to a handler (404, or refused by the server): nothing to compare.
          expect(status).not.toBe(200);
          return;
        }
        routed++;
        expect(status).toBe(200);
        expect(seen.length).toBe(checked + 1);
        const handler = app.served[served]!;
        const read = readAs(method, seen[checked]!);
        const plain = readAs(method, plainSpelling(handler.route, handler.params));
        const ambiguous =
          /\\/.test(target.split(/[?#]/)[0]!) &&
          (!target.startsWith('/') || /[#\t\n\f\r ]/.test(target));
        if (ambiguous) {
          // Express and Fastify read this target apart: it is counted under both readings.
          for (const key of plain.keys) expect(read.keys).toContain(key);
        } else expect(read.keys).toEqual(plain.keys);
        if (!exemptHandlers.has(`${method} ${handler.route}`)) expect(read.exempts).toBe(false);
      }),
      { numRuns: 300 },
    );
    // The spellings were hostile, not all refused: many were routed.
    expect(routed).toBeGreaterThan(30);
  });
});
