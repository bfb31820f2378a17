/** The curl lines the demo prints at start: the README's walk-through, in short. */

/**
 * The lines to try against a running demo.
 * @param url - the service's base URL
 * @param options - `adminKeyFromEnv`: the admin key is ADMIN_KEY's, named and never printed
 */
export function curlLines(url: string, options: { adminKeyFromEnv?: boolean } = {}): string {
  const live = `-H 'x-api-key: live-demo-key'`;
  const dev = `-H 'x-api-key: dev-demo-key'`;
  const admin = options.adminKeyFromEnv
    ? `-H "x-admin-key: $ADMIN_KEY"`
    : `-H 'x-admin-key: admin-demo-key'`;
  const jsonBody = `-H 'content-type: application/json'`;
  const codes = `curl -s -o /dev/null -w '%{http_code} ' `;
  const one = `${url}/v1/subscriptions/$id`;
  const gone = `${url}/v1/subscriptions/$gone`;
  return [
    `api-conventions demo service on ${url}`,
    '',
    'A Live client (200 per second, 100 per second on average, 3500 per minute, 20 in flight):',
    `  curl -i ${live} ${url}/booking/v1/reservations`,
    '',
    'A Development client (5 per second, 200 per minute): six calls in a second, the sixth is a 429:',
    `  for i in 1 2 3 4 5 6; do ${codes}${dev} ${url}/booking/v1/reservations; done; echo`,
    '',
    'Read the 429 (text body, Retry-After, Service-Tracking-Id, RateLimit fields):',
    `  for i in 1 2 3 4 5; do ${codes}${dev} ${url}/booking/v1/reservations; done; curl -i ${dev} ${url}/booking/v1/reservations`,
    '',
    'A per-resource limit (Development: 5 patches of one booking per 5 min; another booking counts apart):',
    `  for i in 1 2 3 4 5 6; do ${codes}-X PATCH ${dev} ${url}/booking/v1/bookings/B1; sleep 0.3; done; echo`,
    '',
    'Send your own tracking id; it comes back on the response:',
    `  curl -i ${live} -H 'Service-Tracking-Id: my-trace-42' ${url}/booking/v1/offers`,
    '',
    'Webhooks: subscribe the demo receiver to every reservation event (the 201 shows the signing secret, once, and the id):',
    `  curl -i ${live} ${jsonBody} -d '{"endpointUrl":"${url}/demo/receiver","events":["reservation/*"]}' ${url}/v1/subscriptions`,
    '',
    'List subscriptions (page number and page size):',
    `  curl -i ${live} '${url}/v1/subscriptions?pageNumber=1&pageSize=20'`,
    '',
    'Read one, change it (PATCH), rotate its signing secret (the old one signs 24 hours more), delete it (id=... first):',
    `  curl -i ${live} ${one}`,
    `  curl -i -X PATCH ${live} ${jsonBody} -d '{"propertyIds":["BER"]}' ${one}`,
    `  curl -i -X POST ${live} ${one}/secret/rotate`,
    `  curl -i -X DELETE ${live} ${one}`,
    '',
    'Emit a test event; it is delivered, signed, to every matching subscription:',
    `  curl -i ${live} ${jsonBody} -d '{"kind":"reservation/created","data":{"id":"R-1001"}}' ${url}/v1/test-events`,
    '',
    'What the receiver got for this account (verified: true), and the delivery log (cursor and limit):',
    `  curl -s ${live} ${url}/demo/receiver; echo`,
    `  curl -i ${live} '${url}/v1/audit-logs?limit=50'`,
    '',
    'A receiver that is gone answers 410: its subscription is disabled at once (this terminal prints it). Subscribe it, emit a folio event (gone=... first):',
    `  curl -i ${live} ${jsonBody} -d '{"endpointUrl":"${url}/demo/receiver/gone","events":["folio/*"]}' ${url}/v1/subscriptions`,
    `  curl -i ${live} ${jsonBody} -d '{"kind":"folio/created"}' ${url}/v1/test-events`,
    '',
    'Why it is disabled (disabledReason, disabledAt), its attempts, then to the working receiver, enabled, and what it failed replayed with the same webhook-id (msg=... for one message):',
    `  curl -i ${live} ${gone}`,
    `  curl -i ${live} ${gone}/attempts`,
    `  curl -i -X PATCH ${live} ${jsonBody} -d '{"endpointUrl":"${url}/demo/receiver","status":"enabled"}' ${gone}`,
    `  curl -i -X POST ${live} ${jsonBody} -d '{"since":"2020-01-01T00:00:00Z"}' ${gone}/replay`,
    `  curl -i -X POST ${live} ${url}/v1/messages/$msg/replay`,
    '',
    "The admin API (its own key, ADMIN_KEY; no client's limits count it): peek at what the Development client's next PATCH of B1 would get, spending nothing; reset the client; raise it to twice its limits for an hour, peek, and remove the override; the metrics in the Prometheus text format:",
    `  curl -s ${admin} '${url}/admin/limits/demo-dev-app/DEV-ACME?method=PATCH&path=/booking/v1/bookings/B1'; echo`,
    `  curl -s -X DELETE ${admin} ${url}/admin/limits/demo-dev-app/DEV-ACME; echo`,
    `  curl -s -X PUT ${admin} ${jsonBody} -d '{"multiplier":2,"ttlSeconds":3600}' ${url}/admin/overrides/demo-dev-app; echo`,
    `  curl -s ${admin} ${url}/admin/limits/demo-dev-app/DEV-ACME; echo`,
    `  curl -s -X DELETE ${admin} ${url}/admin/overrides/demo-dev-app; echo`,
    `  curl -s ${admin} ${url}/metrics | grep '^api_conventions_limits_decisions'`,
    '',
    'Subscriptions, secrets, the delivery log and pending deliveries are stored: stop with Ctrl+C, run npm run demo again, and list them.',
    '',
    'Press Ctrl+C to stop.',
  ].join('\n');
}
