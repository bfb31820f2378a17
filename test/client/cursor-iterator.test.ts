/**
 * The cursor iterator's next cursor and options, against a real local server whose answers each
 * test writes: a next cursor that is there but cannot be followed stops the listing with a typed
 * error, never as the end of the data; every valid way of giving the cursor and the end still reads
 * the whole list.
 */
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import {
  bodyNextCursor,
  cursorItems,
  cursorPages,
  isPaginationClientError,
} from '../../src/client/index.js';
import { isConfigurationError } from '../../src/index.js';
import {
  expectRefusedOptions,
  readPages as read,
  scriptedServer,
} from '../support/scripted-server.js';

const app = scriptedServer('cursor');
const { requests } = app;
const serve = app.serve;

// JSON values that are neither a cursor (a non-empty string) nor an end marker (null, '').
const notACursor = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
  fc.array(fc.string(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.string(), { maxKeys: 3 }),
);

describe('cursor iterator: the next cursor', () => {
  it('reads every item exactly once, whichever valid place the cursor is in and whichever end marker the last page gives', async () => {
    const place = fc.constantFrom('top', 'pagination', 'both');
    const endMarker = fc.constantFrom('absent', null, '');
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 6 }),
        fc.array(place, { minLength: 6, maxLength: 6 }),
        endMarker,
        endMarker,
        async (pagesInList, places, endTop, endNested) => {
          // Arrange: page i holds item i and points to page i + 1, the last one to nothing.
          serve((cursor) => {
            const at = cursor === '' ? 0 : Number(cursor.slice(1));
            if (at >= pagesInList - 1) {
              const body: Record<string, unknown> = { items: [at], pagination: {} };
              if (endTop !== 'absent') body.nextCursor = endTop;
              if (endNested !== 'absent') body.pagination = { nextCursor: endNested };
              return body;
            }
            const next = `c${at + 1}`;
            const where = places[at];
            return {
              items: [at],
              ...(where === 'pagination' ? {} : { nextCursor: next }),
              pagination: where === 'top' ? { limit: 1 } : { nextCursor: next },
            };
          });
          // Act
          const items = [];
          for await (const item of cursorItems<number>({ url: `${app.url}/logs` })) {
            items.push(item);
          }
          // Assert
          expect(items).toEqual(Array.from({ length: pagesInList }, (_, i) => i));
          expect(requests).toHaveLength(pagesInList);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('never reads a next cursor that is not a string as the end: the listing stops with invalid_page_body, that page not yielded', async () => {
    await fc.assert(
      fc.asyncProperty(notACursor, fc.constantFrom('top', 'pagination'), async (value, where) => {
        // Arrange: the first page gives a next cursor of the wrong type; a second page exists.
        serve((cursor) =>
          cursor === ''
            ? where === 'top'
              ? { items: [1, 2], nextCursor: value }
              : { items: [1, 2], pagination: { nextCursor: value } }
            : { items: [3, 4] },
        );
        // Act
        const { pages, error } = await read(cursorPages({ url: `${app.url}/logs` }));
        // Assert
        expect(pages).toEqual([]);
        expect(isPaginationClientError(error) && [error.code, error.url]).toEqual([
          'invalid_page_body',
          `${app.url}/logs`,
        ]);
        const path = where === 'top' ? 'nextCursor' : 'pagination.nextCursor';
        expect((error as Error).message).toContain(`answered ${path} `);
        expect((error as Error).message).toContain('the listing stopped there');
        expect(requests).toHaveLength(1);
      }),
      { numRuns: 60 },
    );
  });

  it('stops with invalid_page_body when nextCursor and pagination.nextCursor disagree, instead of ending the listing', async () => {
    const disagreements: [unknown, unknown][] = [
      [null, 'p2'],
      ['', 'p2'],
      ['p2', null],
      ['p2', ''],
      ['p2', 'p3'],
    ];
    for (const [top, nested] of disagreements) {
      serve((cursor) =>
        cursor === ''
          ? { items: [1, 2], nextCursor: top, pagination: { nextCursor: nested } }
          : { items: [3, 4] },
      );
      const { pages, error } = await read(cursorPages({ url: `${app.url}/logs` }));
      expect(pages).toEqual([]);
      expect(isPaginationClientError(error) && error.code).toBe('invalid_page_body');
      expect((error as Error).message).toBe(
        `GET ${app.url}/logs answered nextCursor ${JSON.stringify(top)} and pagination.nextCursor ${JSON.stringify(nested)}, which disagree; the rest of the list cannot be requested, so the listing stopped there.`,
      );
      expect(requests).toHaveLength(1);
    }
  });

  it('follows the cursor both places give alike, and ends when both give an end marker', async () => {
    serve((cursor) =>
      cursor === ''
        ? { items: [1], nextCursor: 'p2', pagination: { nextCursor: 'p2' } }
        : { items: [2], nextCursor: null, pagination: { nextCursor: '' } },
    );
    const { pages, error } = await read(cursorPages<number>({ url: `${app.url}/logs` }));
    expect(error).toBeUndefined();
    expect(pages.map((p) => [p.cursor, p.items, p.nextCursor])).toEqual([
      [undefined, [1], 'p2'],
      ['p2', [2], undefined],
    ]);
  });

  it('stops with invalid_page_body when a nextCursor option finds a value that is not a cursor, and ends on undefined, null or an empty string', async () => {
    serve((cursor) => (cursor === '' ? { items: [1], meta: { next: 42 } } : { items: [2] }));
    const { error } = await read(
      cursorPages({
        url: `${app.url}/logs`,
        nextCursor: (body) => (body as { meta: { next: string } }).meta.next,
      }),
    );
    expect(isPaginationClientError(error) && error.code).toBe('invalid_page_body');
    expect((error as Error).message).toContain('the nextCursor option found 42');

    for (const end of [undefined, null, '']) {
      serve(() => ({ items: [1] }));
      const done = await read(cursorPages({ url: `${app.url}/logs`, nextCursor: () => end }));
      expect(done.error).toBeUndefined();
      expect(done.pages.map((p) => p.nextCursor)).toEqual([undefined]);
      expect(requests).toHaveLength(1);
    }
  });

  it('bodyNextCursor throws invalid_page_body naming the response URL for a cursor it cannot follow', async () => {
    serve(() => ({ items: [1], nextCursor: 3 }));
    const response = await fetch(`${app.url}/logs`);
    const body: unknown = await response.json();
    const error = (() => {
      try {
        return bodyNextCursor(body, response);
      } catch (e) {
        return e;
      }
    })();
    expect(isPaginationClientError(error) && [error.code, error.url]).toEqual([
      'invalid_page_body',
      `${app.url}/logs`,
    ]);
    expect(bodyNextCursor({ nextCursor: null, pagination: { nextCursor: null } })).toBeUndefined();
    expect(bodyNextCursor({ nextCursor: 'c', pagination: { limit: 5 } })).toBe('c');
  });
});

describe('cursor iterator: options', () => {
  it('throws a ConfigurationError naming the option and its range for a limit that is not a whole number >= 1, before any request', async () => {
    const badLimit = fc.oneof(
      fc.double().filter((n) => !Number.isSafeInteger(n) || n < 1),
      fc.integer({ max: 0 }),
      fc.constantFrom(Number.MAX_SAFE_INTEGER + 1, '10', null, { a: 1 }, [5], true),
    );
    await fc.assert(
      fc.asyncProperty(badLimit, async (limit) => {
        const send = vi.fn(async () => Response.json({ items: [] }));
        const { error } = await read(
          cursorPages({ url: 'https://api.test/logs', limit: limit as never, fetch: send }),
        );
        expect(isConfigurationError(error) && error.code).toBe('invalid_option');
        expect((error as Error).message).toContain(
          'limit must be a whole number from 1 to 9007199254740991',
        );
        expect(send).not.toHaveBeenCalled();
      }),
    );
  });

  it('throws a ConfigurationError for options that are not an object, a start cursor that is not a non-empty string, or a reader that is not a function', async () => {
    const send = vi.fn(async () => Response.json({ items: [] }));
    const url = 'https://api.test/logs';
    const cases: [unknown, string][] = [
      [
        null,
        "cursorPages options must be an object such as { url: 'https://api.example.com/audit-logs' }, got null.",
      ],
      [[url], 'got an array'],
      [
        { url, fetch: send, startCursor: '' },
        'startCursor must be a non-empty cursor string from an earlier page (leave it out to start at the first page), got "".',
      ],
      [{ url, fetch: send, startCursor: 7 }, 'startCursor must be a non-empty cursor string'],
      [{ url, fetch: 'fetch' }, 'fetch must be a function'],
      [{ url, fetch: send, items: 'data' }, 'items must be a function'],
      [{ url, fetch: send, nextCursor: 'next' }, 'nextCursor must be a function'],
    ];
    for (const [options, message] of cases) {
      await expectRefusedOptions(
        [cursorPages(options as never), cursorItems(options as never)],
        message,
      );
    }
    expect(send).not.toHaveBeenCalled();
  });

  it('sends a valid limit and start cursor as given', async () => {
    serve(() => ({ items: [] }));
    await read(cursorPages({ url: `${app.url}/logs`, limit: 500, startCursor: 'abc' }));
    expect(requests).toEqual(['?cursor=abc&limit=500']);
  });
});
