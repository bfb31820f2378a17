/**
 * Problem details for HTTP APIs (RFC 9457): the body of every 4xx the library answers other than
 * the 429 (which the specification makes `text/plain`).
 * @module
 */

/** The media type of a problem details body. */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/**
 * The default prefix of problem `type` URIs. A URN, so that it never resolves to a page the
 * integrator does not control; pass your own (an https URL to your docs) where you have one.
 */
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
  /** HTTP status. */
  status: number;
  /** Explanation of this occurrence. */
  detail?: string;
  /** URI of this occurrence. */
  instance?: string;
  /** Prefix of `type`. @defaultValue {@link DEFAULT_PROBLEM_TYPE_BASE} */
  typeBase?: string;
  /** Further extension members (for example `errors`). */
  extensions?: Record<string, unknown>;
}

/**
 * Build a problem details object.
 * @param init - code, title, status and the optional members
 * @returns a plain object, ready for `JSON.stringify`
 * @example
 * ```ts
 * problemDetails({ code: 'page_size_too_large', title: 'Page size too large', status: 400 });
 * ```
 */
export function problemDetails(init: ProblemInit): ProblemDetails {
  // Core members first, in a fixed shape; extensions are copied after and never replace one.
  const problem: ProblemDetails = {
    type: `${init.typeBase ?? DEFAULT_PROBLEM_TYPE_BASE}${init.code}`,
    title: init.title,
    status: init.status,
    code: init.code,
  };
  if (init.detail !== undefined) problem.detail = init.detail;
  if (init.instance !== undefined) problem.instance = init.instance;
  const { extensions } = init;
  if (extensions !== undefined) {
    for (const name of Object.keys(extensions)) {
      if (!RESERVED.has(name)) problem[name] = extensions[name];
    }
  }
  return problem;
}

// Members an extension may not set (RFC 9457 section 3.1, and the library's `code`).
const RESERVED = new Set(['type', 'title', 'status', 'code', 'detail', 'instance']);

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
 */
export function problemResponse(problem: ProblemDetails): ResponseParts {
  return {
    status: problem.status,
    headers: {
      'content-type': `${PROBLEM_CONTENT_TYPE}; charset=utf-8`,
      'cache-control': 'no-store',
    },
    body: JSON.stringify(problem),
  };
}
