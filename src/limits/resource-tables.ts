/**
 * The specification's per-resource limit tables and the Live throttle exemptions, as plain data,
 * exactly as written in its "Per-resource limits" and "Throttling" sections. The limit engine
 * turns these rows into policies; users may copy and change them, since the specification says
 * the values may change.
 * @module
 */

/** One row of a per-resource limit table: at most `limit` requests per `periodMs` per resource. */
export interface ResourceLimitRow {
  /** The route pattern the limit applies to. */
  readonly route: string;
  /** Requests admitted per period, per client, account and resource. */
  readonly limit: number;
  /** The period in milliseconds. */
  readonly periodMs: number;
}

const MINUTE = 60_000;

function rows(...table: [string, number, number][]): readonly ResourceLimitRow[] {
  return Object.freeze(
    table.map(([route, limit, minutes]) =>
      Object.freeze({ route, limit, periodMs: minutes * MINUTE }),
    ),
  );
}

/** Per-resource limits of Live accounts. Two rows on one route both apply. */
export const liveResourceLimits: readonly ResourceLimitRow[] = rows(
  ['PUT /rateplan/v*/rate-plans/{id}/rates', 150, 60],
  ['PUT /rateplan/v*/rate-plans/{id}/rates', 50, 20],
  ['PATCH /rateplan/v*/rates', 200, 1],
  ['PATCH /booking/v*/bookings/{id}', 20, 5],
  ['PATCH /booking/v*/reservations/{id}', 20, 5],
);

/** Per-resource limits of Development and Trial accounts (one table serves both). */
export const developmentResourceLimits: readonly ResourceLimitRow[] = rows(
  ['PUT /rateplan/v*/rate-plans/{id}/rates', 30, 60],
  ['PUT /rateplan/v*/rate-plans/{id}/rates', 10, 20],
  ['PATCH /rateplan/v*/rates', 50, 1],
  ['PATCH /booking/v*/bookings/{id}', 5, 5],
  ['PATCH /booking/v*/reservations/{id}', 5, 5],
);

/**
 * The business-critical calls that the throttle does not apply to on Live accounts. Development
 * and Trial accounts have no exemptions: all their endpoints are throttled.
 */
export const liveThrottleExemptRoutes: readonly string[] = Object.freeze([
  'GET /booking/v*/offers',
  'GET /booking/v*/rate-plan-offers',
  'GET /booking/v*/service-offers',
  'GET /booking/v*/reservations/{id}/offers',
  'GET /booking/v*/reservations/{id}/service-offers',
]);
