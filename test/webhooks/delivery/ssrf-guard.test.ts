/**
 * The SSRF guard at connection time, through the node transport against a real local receiver:
 * literals, a host name that resolves to a private address (localhost, an injected resolver),
 * IPv4-mapped IPv6, the allow-list, and the connection going to the address that was checked.
 */
import type { LookupAddress } from 'node:dns';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addressAllowList,
  type ConnectLookup,
  type DnsLookup,
  ForbiddenAddressError,
  forbiddenAddressRange,
  httpTransport,
  isConfigurationError,
  ssrfGuard,
} from '../../../src/index.js';
import { thrown } from '../../support/thrown.js';
import { startReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';

let receiver: WebhookReceiver;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(() => receiver.close());

const post = (url: string, transport = httpTransport()) =>
  transport({ url, headers: { 'content-type': 'application/json' }, body: '{}', timeoutMs: 5_000 });

/** A resolver that answers every name with fixed addresses, counting its calls. */
function fixedLookup(addresses: readonly string[]): DnsLookup & { calls: string[] } {
  const calls: string[] = [];
  const lookup = (
    hostname: string,
    _options: unknown,
    callback: (error: NodeJS.ErrnoException | null, found: LookupAddress[]) => void,
  ) => {
    calls.push(hostname);
    callback(
      null,
      addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
    );
  };
  return Object.assign(lookup, { calls });
}

/** What a guard's lookup calls back with, as the socket would receive it. */
function lookupOnce(
  lookup: ConnectLookup,
  hostname: string,
  options: Parameters<ConnectLookup>[1],
): Promise<{ error: NodeJS.ErrnoException | null; address: unknown; family?: number | undefined }> {
  return new Promise((resolve) => {
    lookup(hostname, options, (error, address, family) => resolve({ error, address, family }));
  });
}

async function refusal(promise: Promise<unknown>): Promise<ForbiddenAddressError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ForbiddenAddressError);
  return error as ForbiddenAddressError;
}

describe('SSRF guard', () => {
  it('refuses address literals outside public space, in every spelling, before connecting', async () => {
    const before = receiver.received.length;
    const port = receiver.port;
    for (const host of [
      '127.0.0.1',
      '0x7f.1',
      '2130706433',
      '[::1]',
      '[::ffff:127.0.0.1]',
      '[::ffff:7f00:1]',
      '0.0.0.0',
      '169.254.169.254',
      '10.0.0.1',
      '[fd00:ec2::254]',
      '[fe80::1]',
    ]) {
      const error = await refusal(post(`http://${host}:${port}/in`));
      expect(error.code).toBe('forbidden_address');
    }
    expect(receiver.received.length).toBe(before);
  });

  it('refuses a host name that resolves to a private address: localhost, and an injected resolver', async () => {
    const before = receiver.received.length;
    const viaLocalhost = await refusal(post(`http://localhost:${receiver.port}/in`));
    expect(viaLocalhost.message).toContain('The host localhost resolves to');
    expect(['loopback']).toContain(viaLocalhost.range);
    for (const addresses of [['10.1.2.3'], ['::ffff:192.168.0.1'], ['8.8.8.8', '127.0.0.1']]) {
      const lookup = fixedLookup(addresses);
      const error = await refusal(
        post(`http://hooks.example.test:${receiver.port}/in`, httpTransport({ lookup })),
      );
      expect(error.host).toBe('hooks.example.test');
      expect(lookup.calls).toEqual(['hooks.example.test']);
    }
    expect(receiver.received.length).toBe(before);
  });

  it('delivers to an allow-listed address, connecting to the address the lookup checked', async () => {
    const lookup = fixedLookup(['127.0.0.1']);
    const transport = httpTransport({ lookup, allow: ['127.0.0.0/8'] });
    const response = await post(`http://hooks.example.test:${receiver.port}/checked`, transport);
    expect(response.status).toBe(204);
    expect(lookup.calls).toEqual(['hooks.example.test']);
    const last = receiver.received.at(-1)!;
    expect(last.path).toBe('/checked');
    expect(last.headers.host).toBe(`hooks.example.test:${receiver.port}`);
    // Literals in the allow-list pass too; other private ranges stay refused.
    expect((await post(`http://127.0.0.1:${receiver.port}/in`, transport)).status).toBe(204);
    await refusal(post(`http://10.0.0.1:${receiver.port}/in`, transport));
  });

  it('checks a host with its own guard even after a transport with a wider allow-list connected to it', async () => {
    const url = `http://reused.example.test:${receiver.port}/in`;
    const wide = httpTransport({ lookup: fixedLookup(['127.0.0.1']), allow: ['127.0.0.0/8'] });
    expect((await post(url, wide)).status).toBe(204);
    // Let the finished request hand its connection back for keep-alive.
    await new Promise<void>((resolve) => setImmediate(resolve));
    const before = receiver.received.length;
    const strict = await refusal(post(url, httpTransport({ lookup: fixedLookup(['127.0.0.1']) })));
    expect(strict.range).toBe('loopback');
    expect(receiver.received.length).toBe(before);
  });

  it('refuses exactly what forbiddenAddressRange names, unless the allow-list holds it', () => {
    const address = fc.oneof(
      fc.ipV4(),
      fc.ipV6(),
      fc.ipV4().map((v4) => `::ffff:${v4}`),
      fc.constantFrom('127.0.0.1', '10.0.0.8', '169.254.169.254', '::1', 'fd00:ec2::254'),
    );
    fc.assert(
      fc.property(address, fc.boolean(), (candidate, allowIt) => {
        const guard = ssrfGuard(allowIt ? { allow: [candidate] } : {});
        const expected = allowIt ? undefined : forbiddenAddressRange(candidate);
        expect(guard.refusal(candidate)).toBe(expected);
      }),
    );
  });

  it('matches allow-list ranges by family, IPv4-mapped as IPv4, and refuses bad entries', () => {
    const list = addressAllowList(['10.1.0.0/16', '::ffff:192.168.1.0/120', 'fd00::/8']);
    expect(list.allows('10.1.200.3')).toBe(true);
    expect(list.allows('::ffff:10.1.0.1')).toBe(true);
    expect(list.allows('10.2.0.1')).toBe(false);
    expect(list.allows('192.168.1.77')).toBe(true);
    expect(list.allows('[fd12::1]')).toBe(true);
    expect(list.allows('not an address')).toBe(false);
    const error = thrown(() => addressAllowList(['127.0.0.1', 'localhost']));
    expect(isConfigurationError(error) && error.code).toBe('invalid_address_allow_list');
    expect((error as Error).message).toContain(
      'allow[1] must be an IP address or CIDR range such as 127.0.0.1 or 10.0.0.0/8, got "localhost".',
    );
  });

  it("passes the socket's address family on to the resolver, spelt as a number or a name", async () => {
    const asked: Array<number | undefined> = [];
    const lookup: DnsLookup = (_hostname, options, callback) => {
      asked.push(options.family);
      callback(null, [{ address: '8.8.8.8', family: 4 }]);
    };
    const guard = ssrfGuard({ lookup });
    for (const family of [4, 'IPv4', 6, 'IPv6', 0, undefined]) {
      await lookupOnce(guard.lookup, 'hooks.example.test', family === undefined ? {} : { family });
    }
    expect(asked).toEqual([4, 4, 6, 6, undefined, undefined]);
  });

  it('answers a lookup for every address with all of them, and one for a single address with the first', async () => {
    const addresses = [
      { address: '8.8.8.8', family: 4 },
      { address: '2001:4860:4860::8888', family: 6 },
    ];
    const guard = ssrfGuard({
      lookup: (_hostname, _options, callback) => callback(null, addresses),
    });
    expect(await lookupOnce(guard.lookup, 'hooks.example.test', { all: true })).toEqual({
      error: null,
      address: addresses,
      family: undefined,
    });
    expect(await lookupOnce(guard.lookup, 'hooks.example.test', {})).toEqual({
      error: null,
      address: '8.8.8.8',
      family: 4,
    });
  });

  it("fails the lookup with the resolver's error, or ENOTFOUND when the host has no address", async () => {
    const outage = Object.assign(new Error('queryA ESERVFAIL hooks.example.test'), {
      code: 'ESERVFAIL',
    });
    const failing = ssrfGuard({ lookup: (_hostname, _options, callback) => callback(outage, []) });
    const failed = await lookupOnce(failing.lookup, 'hooks.example.test', { all: true });
    expect(failed.error).toBe(outage);
    expect(failed.address).toEqual([]);
    for (const found of [[], undefined]) {
      const empty = ssrfGuard({
        lookup: (_hostname, _options, callback) => callback(null, found as never),
      });
      const { error, address } = await lookupOnce(empty.lookup, 'hooks.example.test', {});
      expect(error?.code).toBe('ENOTFOUND');
      expect(error?.message).toBe('hooks.example.test has no address');
      expect(address).toEqual([]);
    }
  });

  it('fails a delivery whose host cannot be resolved as connection_failed, naming the cause', async () => {
    const before = receiver.received.length;
    const url = `http://hooks.example.test:${receiver.port}/in`;
    const cases: Array<[DnsLookup, string]> = [
      [
        (_hostname, _options, callback) => callback(new Error('resolver offline'), []),
        'resolver offline',
      ],
      [(_hostname, _options, callback) => callback(null, []), 'ENOTFOUND'],
    ];
    for (const [lookup, cause] of cases) {
      const error = await post(url, httpTransport({ lookup })).then(
        () => undefined,
        (e: { code: string; message: string }) => e,
      );
      expect(error?.code).toBe('connection_failed');
      expect(error?.message).toBe(
        `Could not deliver to hooks.example.test:${receiver.port}: ${cause}.`,
      );
    }
    expect(receiver.received.length).toBe(before);
  });

  it('reports a timeout and an unreachable host as transport errors with codes', async () => {
    const transport = httpTransport({ allow: ['127.0.0.1'] });
    const codeOf = (url: string, timeoutMs: number) =>
      transport({ url, headers: {}, body: '', timeoutMs }).then(
        () => undefined,
        (e: { code: string }) => e.code,
      );
    receiver.respond(() => undefined); // never answers
    const slow = await codeOf(`${receiver.url}/slow`, 50);
    receiver.respond(() => ({ status: 204 }));
    expect(slow).toBe('timeout');
    const closed = await startReceiver();
    await closed.close();
    expect(await codeOf(`${closed.url}/gone`, 5_000)).toBe('connection_failed');
  });
});
