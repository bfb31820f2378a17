/** Problem details (RFC 9457): every 4xx body but the 429's, which is `text/plain`. @module */
import { ConfigurationError } from '../errors/index.js';
import { describe } from '../internal/describe.js';

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
 * @throws ConfigurationError `invalid_option` for a bad member (`status` must be 400 to 599)
 * @example
 * ```ts
 * problemDetails({ code: 'page_size_too_large', title: 'Page size too large', status: 400 });
 * ```
 */
export function problemDetails(init: ProblemInit): ProblemDetails {
  if (typeof init !== 'object' || init === null) {
    throw new ConfigurationError(
      'invalid_option',
      `problemDetails() needs { code, title, status }, got ${describe(init)}.`,
    );
  }
  // Each member read once: what is checked is what is written.
  const { code, title, status, detail, instance, typeBase, extensions } = init;
  checkString(code, 'code', false);
  checkString(title, 'title', false);
  checkString(detail, 'detail', true);
  checkString(instance, 'instance', true);
  checkString(typeBase, 'typeBase', true);
  checkStatus(status, 'problemDetails() status');
  // Core members first, in a fixed shape; extensions are copied after and never replace one.
  const problem: ProblemDetails = {
    type: `${typeBase ?? DEFAULT_PROBLEM_TYPE_BASE}${code}`,
    title,
    status,
    code,
  };
  if (detail !== undefined) problem.detail = detail;
  if (instance !== undefined) problem.instance = instance;
  if (extensions !== undefined) copyExtensions(problem, extensions);
  return problem;
}

// Members an extension may not set (RFC 9457 section 3.1, and the library's `code`).
const RESERVED = new Set(['type', 'title', 'status', 'code', 'detail', 'instance']);

function checkString(value: unknown, name: string, optional: boolean): void {
  if (typeof value === 'string' || (optional && value === undefined)) return;
  throw new ConfigurationError(
    'invalid_option',
    `problemDetails() ${name} must be a string${optional ? ' when given' : ''}, got ${describe(value)}.`,
  );
}

function checkStatus(status: unknown, what: string): asserts status is number {
  if (!Number.isInteger(status) || (status as number) < 400 || (status as number) > 599) {
    throw new ConfigurationError(
      'invalid_option',
      `${what} must be a whole number from 400 to 599, got ${describe(status)}.`,
    );
  }
}

// Copied as own data members: an assignment to `problem.__proto__` (a member JSON.parse makes from
// a client's body) would replace the problem's prototype and drop the member instead.
function copyExtensions(problem: ProblemDetails, extensions: unknown): void {
  const prototype =
    typeof extensions === 'object' && extensions !== null
      ? Object.getPrototypeOf(extensions)
      : undefined;
  if (prototype !== Object.prototype && prototype !== null) {
    throw new ConfigurationError(
      'invalid_option',
      `problemDetails() extensions must be a plain object of extension members when given, got ${describe(extensions)}.`,
    );
  }
  const members = extensions as Record<string, unknown>;
  for (const name of Object.keys(members)) {
    if (RESERVED.has(name)) continue;
    Object.defineProperty(problem, name, {
      value: members[name],
      enumerable: true,
      writable: true,
      configurable: true,
    });
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
    throw new ConfigurationError(
      'invalid_option',
      `problemResponse() needs a problem details object, got ${describe(problem)}.`,
    );
  }
  const { status } = problem;
  checkStatus(status, 'problemResponse() problem.status');
  let body: string | undefined;
  let cause: unknown;
  try {
    body = JSON.stringify(problem);
  } catch (error) {
    cause = error;
  }
  // A member's toJSON may also make the whole problem undefined.
  if (typeof body !== 'string') {
    throw new ConfigurationError(
      'invalid_option',
      `problemResponse() cannot write the problem as JSON${cause instanceof Error ? ` (${cause.message})` : ''}; keep extension members to JSON values.`,
      cause === undefined ? undefined : { cause },
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
