import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_PROBLEM_TYPE_BASE,
  isConfigurationError,
  type ProblemDetails,
  problemDetails,
  problemResponse,
} from '../../src/index.js';
import { thrown } from '../support/thrown.js';

const CORE = ['type', 'title', 'status', 'code', 'detail', 'instance'];

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

  it('copies every extension member of a JSON body as its own data member: nothing becomes the prototype, nothing is lost', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), (member, kept) => {
        const extensions = JSON.parse(
          `{"__proto__":${JSON.stringify(member)},"kept":${JSON.stringify(kept)}}`,
        ) as Record<string, unknown>;
        const problem = problemDetails({ code: 'x', title: 'X', status: 400, extensions });
        expect(Object.getPrototypeOf(problem)).toBe(Object.prototype);
        const given = Object.getOwnPropertyDescriptor(extensions, '__proto__')?.value;
        expect(Object.getOwnPropertyDescriptor(problem, '__proto__')?.value).toBe(given);
        const body = JSON.parse(problemResponse(problem).body) as Record<string, unknown>;
        // Compared as JSON: -0 is written as 0.
        const sent = JSON.parse(JSON.stringify({ member, kept }));
        expect(Object.getOwnPropertyDescriptor(body, '__proto__')?.value).toEqual(sent.member);
        expect(body.kept).toEqual(sent.kept);
      }),
    );
    const problem = problemDetails({
      code: 'x',
      title: 'X',
      status: 400,
      extensions: JSON.parse('{"__proto__":{"injected":1},"kept":2}'),
    });
    expect((problem as { injected?: unknown }).injected).toBeUndefined();
  });

  it('keeps the core members and the extensions of any plain object, null-prototype ones included', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), fc.boolean(), (members, bare) => {
        const extensions = bare ? Object.assign(Object.create(null), members) : members;
        const problem: ProblemDetails = problemDetails({
          code: 'c',
          title: 'T',
          status: 422,
          extensions,
        });
        expect([problem.type, problem.title, problem.status, problem.code]).toEqual([
          `${DEFAULT_PROBLEM_TYPE_BASE}c`,
          'T',
          422,
          'c',
        ]);
        for (const name of Object.keys(members)) {
          if (!CORE.includes(name))
            expect(Object.getOwnPropertyDescriptor(problem, name)?.value).toEqual(members[name]);
        }
      }),
    );
  });

  it('throws a ConfigurationError invalid_option, not a TypeError, for what cannot make a problem', () => {
    const base = { code: 'x', title: 'X', status: 400 };
    const attempts: Array<() => unknown> = [
      () => problemDetails(undefined as never),
      () => problemDetails(null as never),
      () => problemDetails({ ...base, extensions: null as never }),
      () => problemDetails({ ...base, extensions: 'abc' as never }),
      () => problemDetails({ ...base, extensions: ['a'] as never }),
      () => problemDetails({ ...base, extensions: new Map() as never }),
      () => problemDetails({ ...base, status: 'abc' as never }),
      () => problemDetails({ ...base, status: 200 }),
      () => problemDetails({ ...base, status: 600 }),
      () => problemDetails({ ...base, status: 400.5 }),
      () => problemDetails({ ...base, status: Number.NaN }),
      () => problemDetails({ ...base, code: undefined as never }),
      () => problemDetails({ ...base, title: 7 as never }),
      () => problemDetails({ ...base, detail: {} as never }),
      () => problemResponse(null as never),
      () => problemResponse({ type: 't', title: 'T', status: 'abc' as never }),
      () => problemResponse(problemDetails({ ...base, extensions: { n: 1n } })),
      () => {
        const cycle: Record<string, unknown> = {};
        cycle.self = cycle;
        return problemResponse(problemDetails({ ...base, extensions: { cycle } }));
      },
    ];
    for (const attempt of attempts) {
      const error = thrown(attempt);
      expect(isConfigurationError(error) && error.code, String(attempt)).toBe('invalid_option');
    }
  });

  it('says what to give instead, in the one wording, and refuses a misspelt member with the nearest name', () => {
    const base = { code: 'x', title: 'X', status: 400 };
    const cases: [() => unknown, string][] = [
      [
        () => problemDetails({ ...base, detial: 'Page 3 of 2.' } as never),
        'problemDetails() has no option "detial"; did you mean "detail"? Its options are code, title, status, detail, instance, typeBase, extensions.',
      ],
      [
        () => problemDetails(undefined as never),
        'problemDetails() options must be an object such as { code, title, status }, got undefined.',
      ],
      [
        () => problemDetails({ ...base, status: 200 }),
        'status must be a whole number from 400 to 599, got 200.',
      ],
      [
        () => problemDetails({ ...base, code: undefined as never }),
        'code must be a string, got undefined.',
      ],
      [
        () => problemDetails({ ...base, extensions: new Map() as never }),
        'extensions must be a plain object of extension members, got an object.',
      ],
      [
        () =>
          problemDetails({
            ...base,
            get title(): string {
              throw new Error('boom');
            },
          }),
        'problemDetails() options must be plain data, got an object that threw when read.',
      ],
      [
        () => problemResponse(null as never),
        'problemResponse() problem must be a problem details object, got null.',
      ],
      [
        () => problemResponse({ type: 't', title: 'T', status: 'abc' as never }),
        'problemResponse() problem.status must be a whole number from 400 to 599, got "abc".',
      ],
      [
        () => problemResponse(problemDetails({ ...base, extensions: { n: 1n } })),
        'problemResponse() problem must be an object JSON.stringify writes (keep extension members to JSON values), got an object.',
      ],
      [
        () =>
          problemDetails({
            ...base,
            extensions: {
              get member(): never {
                throw new Error('boom');
              },
            },
          }),
        'extensions must be a plain object of extension members, got an object that threw when read.',
      ],
      [
        () => {
          const { proxy, revoke } = Proxy.revocable({}, {});
          revoke();
          return problemResponse(proxy as never);
        },
        'problemResponse() problem must be a problem details object, got an object that threw when read.',
      ],
    ];
    for (const [attempt, message] of cases) {
      expect(thrown(attempt)).toMatchObject({ code: 'invalid_option', message });
    }
  });
});
