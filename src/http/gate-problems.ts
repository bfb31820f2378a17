/**
 * The gate's own answers, as problem details carrying the request's tracking id: 401 for a
 * request it may not limit as anonymous, 500 for one `identify` failed on, 503 when it cannot
 * check the limits.
 * @module
 */
import {
  type ProblemInit,
  problemDetails,
  problemResponse,
  type ResponseParts,
} from './problem-details.js';

/**
 * 503: the limits could not be checked; no limit of the client was reached.
 * @param trackingId - the request's tracking id
 * @param header - the tracking id header, lower case
 * @param retryAfterSeconds - the Retry-After to send
 */
export function unavailable(
  trackingId: string,
  header: string,
  retryAfterSeconds: number,
): ResponseParts {
  const response = gateProblem(trackingId, header, {
    code: 'rate_limit_unavailable',
    title: 'Rate limits cannot be checked',
    status: 503,
    detail: `The service could not check this request against its rate limits, so it was not processed. No limit of yours was reached. Try again in ${retryAfterSeconds} second${retryAfterSeconds === 1 ? '' : 's'}; quote tracking id ${trackingId} when you report it.`,
  });
  response.headers['retry-after'] = String(retryAfterSeconds);
  return response;
}

/**
 * 500: `identify` failed, so the request could not be attributed.
 * @param trackingId - the request's tracking id
 * @param header - the tracking id header, lower case
 */
export function notAttributed(trackingId: string, header: string): ResponseParts {
  return gateProblem(trackingId, header, {
    code: 'request_not_attributed',
    title: 'The request could not be attributed',
    status: 500,
    detail: `The service failed to tell who sent this request, so it was not processed. Quote tracking id ${trackingId} when you report it.`,
  });
}

/**
 * 401: the request is not attributed and anonymous requests are refused.
 * @param trackingId - the request's tracking id
 * @param header - the tracking id header, lower case
 */
export function unauthenticated(trackingId: string, header: string): ResponseParts {
  return gateProblem(trackingId, header, {
    code: 'unauthenticated',
    title: 'Authentication required',
    status: 401,
    detail: `This service serves identified clients only; send your credentials. Tracking id ${trackingId}.`,
  });
}

function gateProblem(trackingId: string, header: string, problem: ProblemInit): ResponseParts {
  const response = problemResponse(problemDetails(problem));
  response.headers[header] = trackingId;
  return response;
}
