import { describe, expect, it } from 'vitest';
import {
  DEFAULT_PROBLEM_TYPE_BASE,
  paginationErrorCodes,
  paginationProblem,
} from '../../src/index.js';

describe('pagination errors', () => {
  it('pins the catalogue of codes', () => {
    expect([...paginationErrorCodes]).toEqual([
      'parameter_repeated',
      'parameter_not_a_string',
      'not_a_decimal_integer',
      'page_number_too_small',
      'page_number_too_large',
      'page_size_too_small',
      'page_size_too_large',
      'limit_too_small',
      'limit_too_large',
      'cursor_malformed',
      'cursor_invalid_signature',
      'cursor_expired',
      'cursor_query_mismatch',
    ]);
  });

  it('renders every code as problem details with its own type and a title', () => {
    for (const code of paginationErrorCodes) {
      const problem = paginationProblem([{ code, parameter: 'p', message: 'm' }]);
      expect(problem.type).toBe(`${DEFAULT_PROBLEM_TYPE_BASE}${code}`);
      expect(problem.title.length).toBeGreaterThan(0);
      expect(problem).toMatchObject({ status: 400, code, detail: 'm', parameter: 'p' });
    }
  });
});
