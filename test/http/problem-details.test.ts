import { describe, expect, it } from 'vitest';
import { DEFAULT_PROBLEM_TYPE_BASE, problemDetails, problemResponse } from '../../src/index.js';

describe('problem details (RFC 9457)', () => {
  it('builds type from the code, keeps extensions, and never lets an extension override a core member', () => {
    const problem = problemDetails({
      code: 'page_size_too_large',
      title: 'Page size too large',
      status: 400,
      detail: 'pageSize must be at most 200.',
      extensions: { parameter: 'pageSize', status: 999, type: 'evil' },
    });
    expect(problem).toEqual({
      type: `${DEFAULT_PROBLEM_TYPE_BASE}page_size_too_large`,
      title: 'Page size too large',
      status: 400,
      code: 'page_size_too_large',
      detail: 'pageSize must be at most 200.',
      parameter: 'pageSize',
    });
  });

  it('uses a custom type base and instance', () => {
    const problem = problemDetails({
      code: 'x',
      title: 'X',
      status: 422,
      typeBase: 'https://docs.example.com/problems/',
      instance: '/v1/things',
    });
    expect(problem.type).toBe('https://docs.example.com/problems/x');
    expect(problem.instance).toBe('/v1/things');
    expect('detail' in problem).toBe(false);
  });

  it('serialises as application/problem+json with the problem status', () => {
    const parts = problemResponse(problemDetails({ code: 'x', title: 'X', status: 422 }));
    expect(parts.status).toBe(422);
    expect(parts.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    expect(JSON.parse(parts.body)).toMatchObject({ status: 422, code: 'x' });
  });
});
