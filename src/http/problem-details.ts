/** Problem details (RFC 9457): every 4xx body but the 429's, which is `text/plain`. @module */
import {
  checkValue,
  INVALID,
  type Rule,
  readOptions,
  refused,
  requiredValue,
  unreadable,
  wholeNumber,
} from '../internal/options.js';

/** The media type of a problem details body. */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** The default prefix of problem `type` URIs: a URN, never a page you do not control. */
export const DEFAULT_PROBLEM_TYPE_BASE = 'urn:api-conventions:problem:';

/** A problem details object (RFC 9457 section 3), with extension members allowed. */
export interface ProblemDetails {
  /** A URI reference that identifies the problem type; stable per error code. */
  type: string;
  /** A short, human-readable summary of the problem type. */
  title: string;
  /** The HTTP status code. */
  status: number;
  /** A human-readable explanation specific to this occurrence. */
  detail?: string;
  /** A URI reference that identifies this occurrence. */
  instance?: string;
  /** Extension members (RFC 9457 section 3.2). */
  [extension: string]: unknown;
}

/** What it takes to make a {@link ProblemDetails}. */
export interface ProblemInit {
  /** Stable code; becomes the end of `type` and the `code` extension member. */
  code: string;
  /** Short summary of the problem type. */
  title: string;
  /** HTTP status: a whole number from 400 to 599. */
  status: number;
  /** Explanation of this occurrence. */
  detail?: string;
  /** URI of this occurrence. */
  instance?: string;
  /** Prefix of `type`. @defaultValue {@link DEFAULT_PROBLEM_TYPE_BASE} */
  typeBase?: string;
  /** Further extension members, a plain object; one named like a core member is left out. */
  extensions?: Record<string, unknown>;
}

/**
 * Build a problem details object.
 * @param init - code, title, status and the optional members
 * @returns a plain object, ready for `JSON.stringify`
 * @throws ConfigurationError `invalid_option` for a bad member (`status` must be 400 to 599) or
 *   an unknown one (named with the nearest member)
 * @example
 * ```ts
 * problemDetails({ code: 'page_size_too_large', title: 'Page size too large', status: 400 });
 * ```
 */
export function problemDetails(init: ProblemInit): ProblemDetails {
  // Each member read once: what is checked is what is written.
  const read = readOptions(init, 'problemDetails()', PROBLEM_RULES, {
    required: true,
    example: '{ code, title, status }',
  });
  const code = requiredValue(aString, read.code, 'code');
  const title = requiredValue(aString, read.title, 'title');
  const status = requiredValue(aStatus, read.status, 'status');
  // Core members first, in a fixed shape; extensions are copied after and never replace one.
  const problem: ProblemDetails = {
    type: `${read.typeBase ?? DEFAULT_PROBLEM_TYPE_BASE}${code}`,
    title,
    status,
    code,
  };
  if (read.detail !== undefined) problem.detail = read.detail;
  if (read.instance !== undefined) problem.instance = read.instance;
  if (read.extensions !== undefined) copyExtensions(problem, read.extensions);
  return problem;
}

const aString: Rule<string> = {
  expected: 'a string',
  read: (value) => (typeof value === 'string' ? value : INVALID),
};

const aStatus = wholeNumber(400, 599);

const A_PROBLEM = 'a problem details object';

/** A plain object (or one without a prototype): members a class or a Map holds are not data. */
const extensionMembers: Rule<Record<string, unknown>> = {
  expected: 'a plain object of extension members',
  read(value) {
    if (typeof value !== 'object' || value === null) return INVALID;
    let prototype: unknown;
    try {
      prototype = Object.getPrototypeOf(value);
    } catch {
      return INVALID;
    }
    return prototype === Object.prototype || prototype === null
      ? (value as Record<string, unknown>)
      : INVALID;
  },
};

const PROBLEM_RULES = {
  code: aString,
  title: aString,
  status: aStatus,
  detail: aString,
  instance: aString,
  typeBase: aString,
  extensions: extensionMembers,
};

// Members an extension may not set (RFC 9457 section 3.1, and the library's `code`).
const RESERVED = new Set(['type', 'title', 'status', 'code', 'detail', 'instance']);

// Copied as own data members: an assignment to `problem.__proto__` (a member JSON.parse makes from
// a client's body) would replace the problem's prototype and drop the member instead.
function copyExtensions(problem: ProblemDetails, members: Record<string, unknown>): void {
  try {
    for (const name of Object.keys(members)) {
      if (RESERVED.has(name)) continue;
      Object.defineProperty(problem, name, {
        value: members[name],
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
  } catch (cause) {
    throw unreadable('extensions', extensionMembers.expected, members, cause);
  }
}

/** A response as plain data: what any framework can write. */
export interface ResponseParts {
  /** HTTP status code. */
  status: number;
  /** Header names (lower case) and values. */
  headers: Record<string, string>;
  /** The body, already serialised. */
  body: string;
}

/**
 * Serialise a problem as response parts with the `application/problem+json` media type.
 * @param problem - the problem details
 * @throws ConfigurationError `invalid_option` for a bad `status`, or a problem JSON cannot write
 */
export function problemResponse(problem: ProblemDetails): ResponseParts {
  if (typeof problem !== 'object' || problem === null) {
    throw refused('problemResponse() problem', A_PROBLEM, problem);
  }
  let given: unknown;
  try {
    given = problem.status;
  } catch (cause) {
    throw unreadable('problemResponse() problem', A_PROBLEM, problem, cause);
  }
  const status = checkValue(aStatus, given, 'problemResponse() problem.status');
  let body: string | undefined;
  let cause: unknown;
  try {
    body = JSON.stringify(problem);
  } catch (error) {
    cause = error;
  }
  // A member's toJSON may also make the whole problem undefined.
  if (typeof body !== 'string') {
    throw refused(
      'problemResponse() problem',
      'an object JSON.stringify writes (keep extension members to JSON values)',
      problem,
      'invalid_option',
      cause,
    );
  }
  return {
    status,
    headers: {
      'content-type': `${PROBLEM_CONTENT_TYPE}; charset=utf-8`,
      'cache-control': 'no-store',
    },
    body,
  };
}
