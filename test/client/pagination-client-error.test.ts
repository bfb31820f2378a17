import { describe, expect, it } from 'vitest';
import {
  isPaginationClientError,
  PaginationClientError,
  paginationClientErrorCodes,
} from '../../src/client/index.js';
import { ApiConventionsError } from '../../src/index.js';

describe('PaginationClientError', () => {
  it('pins the catalogue of codes', () => {
    expect([...paginationClientErrorCodes]).toEqual([
      'unexpected_status',
      'invalid_page_body',
      'repeated_cursor',
      'unexpected_page',
    ]);
  });

  it('carries the URL and status, and its guard works across copies of the package', () => {
    const error = new PaginationClientError('unexpected_status', 'x', {
      url: 'http://a/',
      status: 503,
    });
    expect(error).toBeInstanceOf(ApiConventionsError);
    expect([error.name, error.code, error.url, error.status]).toEqual([
      'PaginationClientError',
      'unexpected_status',
      'http://a/',
      503,
    ]);
    expect(isPaginationClientError(error)).toBe(true);
    const foreign = Object.assign(new Error('x'), {
      name: 'PaginationClientError',
      code: 'repeated_cursor',
      [Symbol.for('api-conventions.error')]: true,
    });
    expect(isPaginationClientError(foreign)).toBe(true);
    expect(isPaginationClientError(new ApiConventionsError('x', 'y'))).toBe(false);
  });
});
