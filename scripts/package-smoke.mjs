// Run from a scratch project that has the packed tarball installed: the public API works end to end.
import { createRequire } from 'node:module';
import * as esm from 'api-conventions';

const require = createRequire(`${process.cwd()}/`);
const cjs = require('api-conventions');

for (const [label, lib] of [
  ['esm', esm],
  ['cjs', cjs],
]) {
  const problem = lib.problemDetails({ code: 'x', title: 'X', status: 400 });
  if (problem.status !== 400 || problem.type !== `${lib.DEFAULT_PROBLEM_TYPE_BASE}x`) {
    throw new Error(`${label}: problemDetails`);
  }
  // Webhooks: create a subscription into an index, then route an event to it.
  const index = new lib.SubscriptionIndex();
  const created = lib.createSubscription(
    {
      endpointUrl: 'https://hooks.example.com/in',
      events: ['reservation/*'],
      propertyIds: ['BER'],
    },
    'ACME',
    { index, generateId: () => 'sub-1' },
  );
  const matched = index.match({
    accountCode: 'ACME',
    kind: 'reservation/created',
    propertyId: 'BER',
  });
  const refused = lib.createSubscription({ endpointUrl: 'https://0x7f.1/', events: ['*'] }, 'ACME');
  if (created.status !== 201 || matched.length !== 1 || matched[0].id !== 'sub-1') {
    throw new Error(`${label}: createSubscription / SubscriptionIndex`);
  }
  if (refused.status !== 400 || JSON.parse(refused.response.body).errors.length !== 2) {
    throw new Error(`${label}: subscription validation`);
  }
}
