/**
 * An attempt listing's cursor is bound to the account it was issued to: another account sending it
 * gets a 400 `cursor_account_mismatch` naming the `cursor` parameter, over real HTTP, for the audit
 * log and a subscription's attempts alike; the account it was issued to pages on with it.
 */
import { createServer } from 'node:http';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeFetchHandler } from '../../../src/adapters/node.js';
import type { AttemptOutcome, DeliveryAttempt } from '../../../src/index.js';
import type { StartedServer } from '../../support/adapter-suite.js';
import { exchange } from '../../support/fetch-echo.js';
import { listen } from '../../support/listen.js';
import {
  call,
  type ServiceSetup,
  START,
  serviceSetup,
  subscriptionBody,
} from '../../support/webhook-service.js';

const anAttempt = (
  subscriptionId: string,
  n: number,
  outcome: AttemptOutcome,
): DeliveryAttempt => ({
  id: `msg_${subscriptionId}_${n}`,
  subscriptionId,
  endpointUrl: 'https://hooks.example.com/in',
  attempt: 1,
  at: START + n,
  status: 503,
  outcome,
});

let made: ServiceSetup;
let server: StartedServer;
const ids: Record<string, string> = {};
beforeAll(async () => {
  made = serviceSetup();
  for (const account of ['ACME', 'OTHER']) {
    const created = await call(made.service, 'POST', '/v1/subscriptions', {
      account,
      body: subscriptionBody(),
    });
    ids[account] = created.body.id;
    for (let n = 0; n < 3; n++) {
      await made.repository.recordAttempt(account, anAttempt(created.body.id, n, 'failed'));
    }
  }
  server = await listen(createServer(nodeFetchHandler(made.service)));
});
afterAll(async () => {
  await server.close();
  await made.service.close();
});

const get = async (account: string, path: string) => {
  const answer = await exchange(server.url, path, { headers: { 'x-account': account } });
  return { status: answer.status, body: JSON.parse(answer.body) };
};

describe('an attempt listing cursor and its account', () => {
  it('is refused for another account with 400 cursor_account_mismatch and parameter cursor', async () => {
    for (const listing of ['/v1/audit-logs', '/v1/subscriptions/{id}/attempts']) {
      const path = (account: string) => listing.replace('{id}', ids[account]!);
      const first = await get('ACME', `${path('ACME')}?limit=1`);
      expect(first.status, listing).toBe(200);
      const cursor = encodeURIComponent(first.body.nextCursor);
      const own = await get('ACME', `${path('ACME')}?limit=1&cursor=${cursor}`);
      expect(own.status, listing).toBe(200);
      expect(own.body.items).toHaveLength(1);
      // The same listing of the other account, the cursor sent as it was issued.
      const foreign = await get('OTHER', `${path('OTHER')}?limit=1&cursor=${cursor}`);
      expect(foreign.status, listing).toBe(400);
      expect(foreign.body).toMatchObject({ code: 'cursor_account_mismatch', parameter: 'cursor' });
      expect(foreign.body.detail).toContain('another account');
    }
  });

  it('holds for exactly the account it was issued to (any two account codes)', async () => {
    const codes = ['ACME', 'OTHER', 'acme', 'ACME-1', 'A', 'B\u00e9'];
    // Two attempts more each, so that every account's first page of one has a cursor.
    for (const account of codes) {
      for (let n = 0; n < 2; n++) {
        await made.repository.recordAttempt(account, anAttempt(`s-${account}`, n, 'retry'));
      }
    }
    const code = fc.constantFrom(...codes);
    await fc.assert(
      fc.asyncProperty(code, code, async (issuedTo, sentBy) => {
        const first = await call(made.service, 'GET', '/v1/audit-logs?limit=1', {
          account: issuedTo,
        });
        expect(first.body.nextCursor).toEqual(expect.any(String));
        const cursor = encodeURIComponent(first.body.nextCursor);
        const next = await call(made.service, 'GET', `/v1/audit-logs?limit=1&cursor=${cursor}`, {
          account: sentBy,
        });
        if (issuedTo === sentBy) expect(next.status).toBe(200);
        else {
          expect(next.status).toBe(400);
          expect(next.body.code).toBe('cursor_account_mismatch');
        }
      }),
      { numRuns: 80 },
    );
  });
});
