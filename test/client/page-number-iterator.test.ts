/**
 * The page-number iterator's guard against a server that does not serve the page asked for, and
 * its options, against a real local server whose answers each test writes.
 */
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import {
  isPaginationClientError,
  pageNumberItems,
  pageNumberPages,
} from '../../src/client/index.js';
import { isConfigurationError } from '../../src/index.js';
import {
  expectRefusedOptions,
  readPages as read,
  scriptedServer,
} from '../support/scripted-server.js';

const app = scriptedServer('pageNumber');
const { requests } = app;
const serve = app.serve;

const range = (from: number, to: number) =>
  Array.from({ length: Math.max(0, to - from) }, (_, i) => from + i);

describe('page-number iterator: a server that does not serve the page asked for', () => {
  it('never yields an item twice and stops with unexpected_page one request past the last page, when the server clamps pageNumber to its last page', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 30 }),
        fc.integer({ min: 1, max: 8 }),
        fc.constantFrom('none', 'top', 'pagination', 'string'),
        async (total, pageSize, statesNumber) => {
          // Arrange: a server that answers its last page for any later page number, without any
          // end-of-data indicator, stating the page it served (or not).
          const lastPage = Math.ceil(total / pageSize);
          serve((asked) => {
            const served = Math.min(Number(asked), lastPage);
            const items = range((served - 1) * pageSize, Math.min(served * pageSize, total));
            if (statesNumber === 'top') return { items, pageNumber: served };
            if (statesNumber === 'pagination') return { items, pagination: { pageNumber: served } };
            if (statesNumber === 'string') return { items, pageNumber: String(served) };
            return items;
          });
          // Act
          const { pages, error } = await read(
            pageNumberPages<number>({ url: `${app.url}/units?q=1`, pageSize }),
          );
          // Assert
          expect(pages.flatMap((p) => p.items)).toEqual(range(0, total));
          expect(isPaginationClientError(error) && [error.code, error.url]).toEqual([
            'unexpected_page',
            `${app.url}/units?q=1&pageNumber=${lastPage + 1}&pageSize=${pageSize}`,
          ]);
          expect(requests).toHaveLength(lastPage + 1);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('stops with unexpected_page, naming both pages, when a body states another page number than the one asked for', async () => {
    serve(() => ({ items: [1, 2, 3], pagination: { pageNumber: 1 } }));
    const { pages, error } = await read(pageNumberPages({ url: `${app.url}/units`, startPage: 4 }));
    expect(pages).toEqual([]);
    expect(isPaginationClientError(error) && error.code).toBe('unexpected_page');
    expect((error as Error).message).toBe(
      `GET ${app.url}/units?pageNumber=4 answered page 1 instead of page 4: the server does not serve the page asked for (it ignores or clamps pageNumber), so reading on would never end; the listing stopped there.`,
    );
  });

  it('stops with unexpected_page after one page against a server that ignores pageNumber and states nothing', async () => {
    serve(() => ({ items: [1, 2, 3] }));
    const { pages, error } = await read(pageNumberPages({ url: `${app.url}/units` }));
    expect(pages.map((p) => p.pageNumber)).toEqual([1]);
    expect(isPaginationClientError(error) && error.code).toBe('unexpected_page');
    expect((error as Error).message).toContain('answered the same items as page 1');
    expect(requests).toEqual(['?pageNumber=1', '?pageNumber=2']);
  });

  it('reads to the end a list whose pages repeat the same values, when each page states its number', async () => {
    serve((asked) => ({ items: [0, 0], pageNumber: Number(asked), hasMore: asked !== '3' }));
    const items = [];
    for await (const item of pageNumberItems({ url: `${app.url}/availability` })) items.push(item);
    expect(items).toEqual([0, 0, 0, 0, 0, 0]);
  });

  it('stops with unexpected_page rather than request a page number past Number.MAX_SAFE_INTEGER', async () => {
    const last = Number.MAX_SAFE_INTEGER;
    serve((asked) => ({ items: [asked], pageNumber: Number(asked) }));
    const { pages, error } = await read(
      pageNumberPages({ url: `${app.url}/units`, startPage: last - 1 }),
    );
    expect(pages.map((p) => p.pageNumber)).toEqual([last - 1, last]);
    expect(isPaginationClientError(error) && error.code).toBe('unexpected_page');
    expect((error as Error).message).toContain('would pass Number.MAX_SAFE_INTEGER');
    expect(requests).toEqual([`?pageNumber=${last - 1}`, `?pageNumber=${last}`]);
  });
});

describe('page-number iterator: options', () => {
  it('throws a ConfigurationError naming startPage or pageSize and the accepted range for anything but a whole number from 1 to MAX_SAFE_INTEGER, before any request', async () => {
    const notACount = fc.oneof(
      fc.double().filter((n) => !Number.isSafeInteger(n) || n < 1),
      fc.integer({ max: 0 }),
      fc.constantFrom(Number.MAX_SAFE_INTEGER + 1, '2', null, { a: 1 }, [1], false),
    );
    await fc.assert(
      fc.asyncProperty(notACount, fc.constantFrom('startPage', 'pageSize'), async (value, name) => {
        // Arrange
        const send = vi.fn(async () => Response.json({ items: [1] }));
        // Act
        const { error } = await read(
          pageNumberPages({ url: 'https://api.test/units', fetch: send, [name]: value }),
        );
        // Assert
        expect(isConfigurationError(error) && error.code).toBe('invalid_option');
        expect((error as Error).message).toContain(
          `${name} must be a whole number from 1 to 9007199254740991 (Number.MAX_SAFE_INTEGER), got `,
        );
        expect(send).not.toHaveBeenCalled();
      }),
    );
  });

  it('throws a ConfigurationError for options that are not an object or a reader that is not a function', async () => {
    const send = vi.fn(async () => Response.json({ items: [] }));
    const url = 'https://api.test/units';
    const cases: [unknown, string][] = [
      [
        undefined,
        "pageNumberPages options must be an object such as { url: 'https://api.example.com/reservations' }, got undefined.",
      ],
      ['https://api.test/units', 'got "https://api.test/units"'],
      [{ url, fetch: send, isLastPage: true }, 'isLastPage must be a function'],
      [{ url, fetch: send, items: ['a'] }, 'items must be a function'],
      [{ url, fetch: 5 }, 'fetch must be a function'],
    ];
    for (const [options, message] of cases) {
      await expectRefusedOptions(
        [pageNumberPages(options as never), pageNumberItems(options as never)],
        message,
      );
    }
    expect(send).not.toHaveBeenCalled();
  });

  it('sends a valid start page and page size as given', async () => {
    serve(() => []);
    await read(pageNumberPages({ url: `${app.url}/units`, startPage: 7, pageSize: 200 }));
    expect(requests).toEqual(['?pageNumber=7&pageSize=200']);
  });
});
