/**
 * A receiver on a non-public address needs it in two allow-lists: the endpointUrl policy's, where a
 * subscription is checked, and the delivery transport's, where a delivery connects. Each refusal
 * names both settings as they are written, so that fixing one does not end at the other.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  checkEndpointUrl,
  type DeliveryAttempt,
  ForbiddenAddressError,
  httpTransport,
} from '../../../src/index.js';
import { startReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';
import { call, closingSetup, subscriptionBody, until } from '../../support/webhook-service.js';

const setup = closingSetup();
let receiver: WebhookReceiver;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(() => receiver.close());

const BOTH = [
  "`endpointUrl: { allow: ['127.0.0.1'] }`",
  "`delivery: { transport: httpTransport({ allow: ['127.0.0.1'] }) }`",
];

describe('the two allow-lists of a local receiver', () => {
  it('the endpointUrl refusal names both settings, over the API and from checkEndpointUrl', async () => {
    const { service } = setup({ endpointUrl: { allowHttp: true } });
    const url = `http://127.0.0.1:${receiver.port}/in`;
    const answer = await call(service, 'POST', '/v1/subscriptions', {
      body: subscriptionBody({ endpointUrl: url }),
    });
    expect(answer.status).toBe(400);
    const [error] = answer.body.errors;
    expect(error).toMatchObject({ code: 'url_forbidden_address', path: '/endpointUrl' });
    for (const setting of BOTH) expect(error.message).toContain(setting);

    const v6 = checkEndpointUrl(`http://[::1]:${receiver.port}/in`, { allowHttp: true });
    expect(v6.ok).toBe(false);
    if (!v6.ok) {
      expect(v6.errors[0]!.message).toContain("`endpointUrl: { allow: ['::1'] }`");
      expect(v6.errors[0]!.message).toContain("httpTransport({ allow: ['::1'] })");
    }
    const named = checkEndpointUrl(`http://localhost:${receiver.port}/in`, { allowHttp: true });
    expect(named.ok).toBe(false);
    if (!named.ok) {
      expect(named.errors[0]!.code).toBe('url_forbidden_host');
      for (const setting of BOTH) expect(named.errors[0]!.message).toContain(setting);
    }
  });

  it('the transport refusal names both settings: a delivery allowed by endpointUrl alone', async () => {
    const attempts: DeliveryAttempt[] = [];
    const { service } = setup({
      endpointUrl: { allowHttp: true, allow: ['127.0.0.1'] },
      delivery: { transport: httpTransport(), onAttempt: (a) => void attempts.push(a) },
    });
    const before = receiver.received.length;
    const created = await call(service, 'POST', '/v1/subscriptions', {
      body: subscriptionBody({ endpointUrl: `http://127.0.0.1:${receiver.port}/in` }),
    });
    expect(created.status).toBe(201);
    await service.publish({ accountCode: 'ACME', kind: 'reservation/created' });
    await until(() => attempts.length === 1, 'the attempt');
    expect(attempts[0]).toMatchObject({ error: { code: 'forbidden_address' } });
    for (const setting of BOTH) expect(attempts[0]!.error!.message).toContain(setting);
    const log = await call(service, 'GET', `/v1/subscriptions/${created.body.id}/attempts`);
    expect(log.body.items[0].error.message).toContain(BOTH[1]);
    expect(receiver.received.length).toBe(before);
  });

  it('a host name that resolves to a private address points at the transport allow-list', () => {
    const error = new ForbiddenAddressError('hooks.internal', '10.1.2.3', 'private');
    expect(error.message).toContain(
      "`delivery: { transport: httpTransport({ allow: ['10.1.2.3'] }) }`",
    );
  });
});
