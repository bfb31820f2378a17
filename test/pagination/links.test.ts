import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  cursorNavigation,
  formatLinkHeader,
  isConfigurationError,
  pageNumberNavigation,
} from '../../src/index.js';
import { thrown } from '../support/thrown.js';

const pageOf = (link: string | undefined) =>
  link === undefined ? undefined : Number(new URL(link, 'http://x').searchParams.get('pageNumber'));

describe('pageNumberNavigation', () => {
  it('with a total: first is 1, last is ceil(total / size), next exists exactly before the last page, no total invented', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10_000 }),
        fc.integer({ min: 1, max: 200 }),
        fc.integer({ min: 1, max: 100 }),
        (totalItems, pageSize, pageNumber) => {
          const nav = pageNumberNavigation({
            url: '/reservations?status=open',
            pageNumber,
            pageSize,
            totalItems,
          });
          const lastPage = Math.max(1, Math.ceil(totalItems / pageSize));
          expect(pageOf(nav.links.first)).toBe(1);
          expect(pageOf(nav.links.last)).toBe(lastPage);
          expect(nav.endOfData).toBe(pageNumber >= lastPage);
          expect(pageOf(nav.links.next)).toBe(pageNumber < lastPage ? pageNumber + 1 : undefined);
          expect(pageOf(nav.links.prev)).toBe(
            pageNumber > 1 ? Math.min(pageNumber - 1, lastPage) : undefined,
          );
          expect(nav.totalItems).toBe(totalItems);
          for (const link of Object.values(nav.links)) {
            const params = new URL(link, 'http://x').searchParams;
            expect(params.get('pageSize')).toBe(String(pageSize));
            expect(params.get('status')).toBe('open');
          }
        },
      ),
    );
  });

  it('without a total: no last link, no total, and next follows hasMore', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1_000 }), fc.boolean(), (pageNumber, hasMore) => {
        const nav = pageNumberNavigation({ url: '/units', pageNumber, pageSize: 20, hasMore });
        expect('totalItems' in nav).toBe(false);
        expect(nav.links.last).toBeUndefined();
        expect(nav.endOfData).toBe(!hasMore);
        expect(pageOf(nav.links.next)).toBe(hasMore ? pageNumber + 1 : undefined);
      }),
    );
  });

  it('writes an RFC 8288 Link header, relative in and relative out, absolute in and absolute out', () => {
    const nav = pageNumberNavigation({
      url: '/reservations?pageNumber=2&pageSize=20&q=a%20b#x',
      pageNumber: 2,
      pageSize: 20,
      hasMore: true,
    });
    expect(nav.linkHeader).toBe(
      '</reservations?pageNumber=1&pageSize=20&q=a+b>; rel="first", ' +
        '</reservations?pageNumber=1&pageSize=20&q=a+b>; rel="prev", ' +
        '</reservations?pageNumber=3&pageSize=20&q=a+b>; rel="next"',
    );
    const absolute = pageNumberNavigation({
      url: new URL('https://api.example.com/v1/folios'),
      pageNumber: 1,
      pageSize: 50,
      totalItems: 120,
    });
    expect(absolute.links).toEqual({
      first: 'https://api.example.com/v1/folios?pageNumber=1&pageSize=50',
      next: 'https://api.example.com/v1/folios?pageNumber=2&pageSize=50',
      last: 'https://api.example.com/v1/folios?pageNumber=3&pageSize=50',
    });
  });

  it('throws a ConfigurationError without hasMore or totalItems, or for bad numbers or URLs', () => {
    const attempts = [
      () => pageNumberNavigation({ url: '/a', pageNumber: 1, pageSize: 20 }),
      () => pageNumberNavigation({ url: '/a', pageNumber: 0, pageSize: 20, hasMore: true }),
      () => pageNumberNavigation({ url: '/a', pageNumber: 1, pageSize: 1.5, hasMore: true }),
      () => pageNumberNavigation({ url: '/a', pageNumber: 1, pageSize: 20, totalItems: -1 }),
      () =>
        pageNumberNavigation({ url: 'http://[bad', pageNumber: 1, pageSize: 20, hasMore: true }),
      () => cursorNavigation({ url: '/a', limit: 0 }),
    ];
    for (const attempt of attempts) {
      expect(isConfigurationError(thrown(attempt))).toBe(true);
    }
  });
});

describe('links from odd request URLs and values', () => {
  it('keeps a relative link on the same host when the path resolves to a double slash', () => {
    for (const url of [
      '/.//evil.example/a?x=1',
      '/a/..//evil.example/a?x=1',
      '/.///evil.example/a?x=1',
    ]) {
      const nav = pageNumberNavigation({ url, pageNumber: 2, pageSize: 20, hasMore: true });
      for (const link of Object.values(nav.links)) {
        expect(new URL(link, 'https://api.example.com/r').host).toBe('api.example.com');
        expect(new URL(link, 'https://api.example.com/r').searchParams.get('x')).toBe('1');
      }
      const cursor = cursorNavigation({ url, limit: 5, nextCursor: 'n' });
      expect(new URL(cursor.links.next as string, 'https://api.example.com/').host).toBe(
        'api.example.com',
      );
    }
  });

  it('throws a ConfigurationError for a url that is neither a string nor a URL, instead of inventing a host', () => {
    for (const url of [undefined, null, 5, {}, ['/a']]) {
      const attempt = () =>
        pageNumberNavigation({ url: url as never, pageNumber: 1, pageSize: 20, hasMore: true });
      expect(thrown(attempt)).toMatchObject({
        code: 'invalid_option',
        message: expect.stringContaining('url must be a string or a URL'),
      });
      expect(
        isConfigurationError(thrown(() => cursorNavigation({ url: url as never, limit: 5 }))),
      ).toBe(true);
    }
  });

  it('refuses an http(s) URL written without // after the scheme, instead of linking a host of its own', () => {
    for (const url of [
      'http:/reservations?status=open',
      'http:reservations',
      'HTTP:/reservations',
      'https:/reservations',
      'https:reservations',
      'http:\\reservations',
      'wss:/x',
    ]) {
      const message = expect.stringContaining(
        'url must be an absolute URL with // after the scheme (https://api.example.com/reservations) or a path (/reservations?status=open)',
      );
      expect(
        thrown(() => pageNumberNavigation({ url, pageNumber: 2, pageSize: 20, hasMore: true })),
      ).toMatchObject({ name: 'ConfigurationError', code: 'invalid_option', message });
      expect(thrown(() => cursorNavigation({ url, limit: 50, nextCursor: 'abc' }))).toMatchObject({
        name: 'ConfigurationError',
        code: 'invalid_option',
        message,
      });
    }
    // Written with the slashes (either kind, as URL parsers read them), the same URLs are fine.
    expect(
      cursorNavigation({ url: 'HTTP:\\\\api.example/audit-logs', limit: 50, nextCursor: 'abc' })
        .links.next,
    ).toBe('http://api.example/audit-logs?cursor=abc&limit=50');
  });

  it('reads the scheme as the URL parser does, tabs and edge controls dropped', () => {
    // `ws\t+:` is the absolute URL `ws+:`; read as a path it gave the link `?limit=5`.
    const nav = cursorNavigation({ url: 'ws\t+:', limit: 5, nextCursor: 'n' });
    expect(nav.links.next).toBe('ws+:?cursor=n&limit=5');
    expect(() => cursorNavigation({ url: ' \thttp:x', limit: 5 })).toThrow(
      expect.objectContaining({ code: 'invalid_option' }),
    );
  });

  it('never links the host it resolves relative URLs against: links are relative, or on the host given', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('', 'http', 'HTTP', 'https', 'Https', 'ws', 'ftp', 'file', 'urn', 'x-y'),
        fc.constantFrom('', ':', ':/', ':\\', '://', ':\\\\', ':///', ':/\\', ' :/'),
        fc.oneof(
          fc.webPath(),
          fc.webAuthority().map((authority) => `${authority}/r`),
          fc.string({ unit: 'binary-ascii' }),
        ),
        (scheme, separator, rest) => {
          // Arrange
          const url = `${scheme}${separator}${rest}`;
          fc.pre(!url.toLowerCase().includes('relative.invalid'));
          // Act
          const attempt = () => cursorNavigation({ url, limit: 5, nextCursor: 'n' });
          const error = thrown(attempt);
          // Assert
          if (error !== undefined) {
            expect(error).toMatchObject({ name: 'ConfigurationError', code: 'invalid_option' });
            return;
          }
          const nav = cursorNavigation({ url, limit: 5, nextCursor: 'n' });
          for (const link of Object.values(nav.links)) {
            expect(link.toLowerCase()).not.toContain('relative.invalid');
            if (link.startsWith('/')) continue;
            // An absolute link keeps the origin of the URL given, parsed on its own.
            expect(new URL(link).origin).toBe(new URL(url).origin);
          }
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it('throws a ConfigurationError for a hasMore that is not a boolean, instead of reading it as truthy', () => {
    for (const hasMore of ['false', null, 0, 1]) {
      const attempt = () =>
        pageNumberNavigation({ url: '/a', pageNumber: 1, pageSize: 20, hasMore: hasMore as never });
      expect(thrown(attempt)).toMatchObject({ code: 'invalid_option' });
    }
  });

  it('throws a ConfigurationError for a null or empty cursor, instead of linking cursor=null', () => {
    for (const cursor of [null, '', 5]) {
      for (const name of ['nextCursor', 'prevCursor']) {
        const attempt = () => cursorNavigation({ url: '/a', limit: 5, [name]: cursor as never });
        expect(thrown(attempt)).toMatchObject({
          code: 'invalid_option',
          message: expect.stringContaining(`${name} must be a non-empty string`),
        });
      }
    }
  });
});

describe('cursorNavigation', () => {
  it('links next with the next cursor, first without any cursor, and marks the end when there is no next cursor', () => {
    fc.assert(
      fc.property(
        fc.option(fc.string({ minLength: 1 }), { nil: undefined }),
        fc.integer({ min: 1, max: 500 }),
        (nextCursor, limit) => {
          const nav = cursorNavigation({
            url: 'https://api.example.com/audit-logs?cursor=old&type=x',
            limit,
            ...(nextCursor === undefined ? {} : { nextCursor }),
          });
          const first = new URL(nav.links.first).searchParams;
          expect(first.has('cursor')).toBe(false);
          expect(first.get('type')).toBe('x');
          expect(first.get('limit')).toBe(String(limit));
          expect(nav.endOfData).toBe(nextCursor === undefined);
          expect(nav.nextCursor).toBe(nextCursor);
          const next =
            nav.links.next === undefined ? undefined : new URL(nav.links.next).searchParams;
          expect(next?.get('cursor') ?? undefined).toBe(nextCursor);
          expect(nav.links.last).toBeUndefined();
        },
      ),
    );
  });

  it('adds prev when the endpoint pages backwards and a total only when given', () => {
    const nav = cursorNavigation({
      url: '/audit-logs',
      limit: 50,
      prevCursor: 'p',
      nextCursor: 'n',
      totalItems: 3,
    });
    expect(nav.linkHeader).toBe(
      '</audit-logs?limit=50>; rel="first", </audit-logs?cursor=p&limit=50>; rel="prev", </audit-logs?cursor=n&limit=50>; rel="next"',
    );
    expect(nav.totalItems).toBe(3);
  });
});

describe('arguments that are not objects', () => {
  it('throws a ConfigurationError naming the function and what to pass', () => {
    const pageNumber =
      'pageNumberNavigation options must be an object such as { url, pageNumber, pageSize, hasMore }';
    const cursor = 'cursorNavigation options must be an object such as { url, limit, nextCursor }';
    const links =
      "formatLinkHeader links must be an object such as { first: '/a?page=1', next: '/a?page=2' }";
    const cases: [() => unknown, string][] = [
      [() => pageNumberNavigation(null as never), `${pageNumber}, got null.`],
      [() => pageNumberNavigation('/a' as never), `${pageNumber}, got "/a".`],
      [() => cursorNavigation(undefined as never), `${cursor}, got undefined.`],
      [() => cursorNavigation([] as never), `${cursor}, got an array.`],
      [() => formatLinkHeader(null as never), `${links}, got null.`],
      [() => formatLinkHeader('</a>' as never), `${links}, got "</a>".`],
      [() => formatLinkHeader(['/a'] as never), `${links}, got an array.`],
    ];
    for (const [attempt, message] of cases) {
      expect(thrown(attempt)).toMatchObject({
        name: 'ConfigurationError',
        code: 'invalid_option',
        message,
      });
    }
  });

  it('refuses a misspelt key with the nearest name, and a page without hasMore or totalItems', () => {
    const cases: [() => unknown, string][] = [
      [
        () =>
          pageNumberNavigation({ url: '/a', pageNumber: 1, pageSize: 2, hasmore: true } as never),
        'pageNumberNavigation has no option "hasmore"; did you mean "hasMore"? Its options are url, pageNumber, pageSize, hasMore, totalItems.',
      ],
      [
        () => cursorNavigation({ url: '/a', limit: 5, nextcursor: 'x' } as never),
        'cursorNavigation has no option "nextcursor"; did you mean "nextCursor"? Its options are url, limit, nextCursor, prevCursor, totalItems.',
      ],
      [
        () => pageNumberNavigation({ url: '/a', pageNumber: 1, pageSize: 2 }),
        'pageNumberNavigation options must be an object with hasMore (whether another page follows), totalItems or both, got one with neither.',
      ],
      [
        () =>
          pageNumberNavigation({ url: '/a', pageNumber: Number.NaN, pageSize: 2, hasMore: true }),
        'pageNumber must be a whole number from 1 to 9007199254740991 (Number.MAX_SAFE_INTEGER), got NaN.',
      ],
      [
        () =>
          cursorNavigation({
            get url(): string {
              throw new Error('boom');
            },
            limit: 5,
          }),
        'cursorNavigation options must be plain data, got an object that threw when read.',
      ],
    ];
    for (const [attempt, message] of cases) {
      expect(thrown(attempt)).toMatchObject({ code: 'invalid_option', message });
    }
  });
});

describe('formatLinkHeader', () => {
  it('leaves out absent relations', () => {
    expect(formatLinkHeader({ first: '/a', next: undefined, last: '/b' })).toBe(
      '</a>; rel="first", </b>; rel="last"',
    );
    expect(formatLinkHeader({})).toBe('');
  });

  it('throws a ConfigurationError for a URL or relation that would break out of its link', () => {
    const attempts = [
      { next: '/a>; rel="evil", </b' },
      { next: '/a\r\nSet-Cookie: x=1' },
      { next: '/a b' },
      { next: '/ä' },
      { next: 5 as never },
      { 'x"; evil="y': '/a' },
      { 'next\r\nX-Injected: 1': '/a' },
      { '': '/a' },
    ];
    for (const links of attempts) {
      expect(thrown(() => formatLinkHeader(links))).toMatchObject({ code: 'invalid_option' });
    }
    const url =
      'must be a URL in ASCII without spaces, quotes or < > (percent-encode them, as new URL(...).href does)';
    expect(thrown(() => formatLinkHeader({ next: '/a b' }))).toMatchObject({
      message: `formatLinkHeader links["next"] ${url}, got "/a b".`,
    });
    expect(thrown(() => formatLinkHeader({ 'x"y': '/a' }))).toMatchObject({
      message:
        'formatLinkHeader relation must be a name such as "next" (visible ASCII, no quotes or backslashes), got "x\\"y".',
    });
  });

  it('writes every link the navigation helpers build, whatever the request URL', () => {
    fc.assert(
      fc.property(
        fc.webUrl({ withQueryParameters: true, withFragments: true }),
        fc.string(),
        (url, cursor) => {
          fc.pre(cursor !== '');
          const nav = cursorNavigation({ url, limit: 5, nextCursor: cursor });
          expect(nav.linkHeader).toContain('rel="next"');
        },
      ),
    );
  });
});
