/**
 * The portal page's files, served at `{basePath}/portal` (the page), `{basePath}/portal/portal.js`
 * and `{basePath}/portal/portal.css`, each with a Content-Security-Policy that allows no inline
 * script and nothing from another origin, and an entity tag (a matching `If-None-Match` is
 * answered 304). See docs/portal.md.
 * @module
 */
import type { ResponseParts } from '../../http/problem-details.js';
import { INVALID, listOf, type Rule, worded } from '../../internal/options.js';
import { portalFiles } from './portal-files.js';
import { serviceProblem } from './problems.js';

/** Who may frame the portal when nobody is named: nobody. */
export const DEFAULT_PORTAL_FRAME_ANCESTORS: readonly string[] = Object.freeze(["'none'"]);

// A CSP source expression as frame-ancestors takes it: a keyword, a scheme, or a host with an
// optional scheme, wildcard subdomain, port and path; nothing that could end the directive.
const SOURCE =
  /^(?:'self'|'none'|[a-z][a-z0-9+.-]*:|(?:[a-z][a-z0-9+.-]*:\/\/)?(?:\*\.)?[a-z0-9-]+(?:\.[a-z0-9-]+)*(?::(?:[0-9]{1,5}|\*))?(?:\/[a-z0-9\-._~%!$&()*+=:@/]*)?)$/i;

const BARE_KEYWORD = /^(?:self|none)$/i;

/** The rule of `portalFrameAncestors`. @internal */
export const PORTAL_FRAME_ANCESTORS: Rule<string[]> = worded(
  listOf<string>(
    {
      expected:
        "a CSP frame-ancestors source: 'self' or 'none' with their quotes, a scheme such as https:, or a host such as https://app.example.com (no spaces, ; or ,)",
      // A bare self or none is a keyword without its quotes, not a host of that name.
      read: (value) =>
        typeof value === 'string' &&
        value.length <= 512 &&
        SOURCE.test(value) &&
        !BARE_KEYWORD.test(value)
          ? value
          : INVALID,
    },
    1,
  ),
  "a non-empty array of CSP frame-ancestors sources, such as [\"'self'\", 'https://app.example.com']",
);

type PortalFile = (typeof portalFiles)[keyof typeof portalFiles];

const CONTENT_TYPES = {
  html: 'text/html; charset=utf-8',
  css: 'text/css; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
} as const;

/**
 * Answers the portal's paths.
 * @internal
 */
export class PortalPage {
  readonly #prefix: string;
  readonly #policy: string;

  constructor(basePath: string, frameAncestors: readonly string[]) {
    this.#prefix = `${basePath}/portal`;
    // One list of frame-ancestors: 'none' beside a source would be ignored by browsers.
    const ancestors = frameAncestors.includes("'none'") ? ["'none'"] : frameAncestors;
    this.#policy = [
      "default-src 'self'",
      "script-src 'self'",
      "style-src 'self'",
      "connect-src 'self'",
      "img-src 'self'",
      "object-src 'none'",
      "base-uri 'none'",
      "form-action 'none'",
      `frame-ancestors ${ancestors.join(' ')}`,
    ].join('; ');
  }

  /** The answer for a path of the portal, or `undefined` for any other path. */
  answer(method: string, pathname: string, headers: Headers): ResponseParts | undefined {
    if (!pathname.startsWith(this.#prefix)) return undefined;
    const rest = pathname.slice(this.#prefix.length);
    if (rest === '/') {
      // The page's links are relative to `…/portal`: send `…/portal/` there (the fragment stays).
      return {
        status: 308,
        headers: { location: '../portal', 'cache-control': 'no-cache' },
        body: '',
      };
    }
    const name =
      rest === ''
        ? 'html'
        : rest === '/portal.js'
          ? 'js'
          : rest === '/portal.css'
            ? 'css'
            : undefined;
    if (name === undefined) return undefined;
    if (method !== 'GET' && method !== 'HEAD') {
      return serviceProblem(405, 'method_not_allowed', 'Method not allowed', {
        detail: `The portal's files answer GET, HEAD, not ${method.slice(0, 20)}.`,
        headers: { allow: 'GET, HEAD' },
      });
    }
    const file: PortalFile = portalFiles[name];
    const answer: Record<string, string> = {
      'content-type': CONTENT_TYPES[name],
      'cache-control': 'no-cache',
      etag: file.etag,
      'content-security-policy': this.#policy,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
    };
    // The request's headers read only here: the API's requests never pay for the look-up.
    if (matches(headers.get('if-none-match'), file.etag)) {
      return { status: 304, headers: answer, body: '' };
    }
    return { status: 200, headers: answer, body: file.text };
  }
}

// Whether an If-None-Match names the entity tag (or is `*`); weak tags compare by their value.
function matches(ifNoneMatch: string | null, etag: string): boolean {
  if (ifNoneMatch === null) return false;
  return ifNoneMatch
    .split(',')
    .map((tag) => tag.trim().replace(/^W\//, ''))
    .some((tag) => tag === '*' || tag === etag);
}
