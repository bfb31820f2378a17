// The endpointUrl policy and the classification of forbidden addresses.
import fc from 'fast-check';
import ipaddr from 'ipaddr.js';
import { describe, expect, it } from 'vitest';
import {
  checkEndpointUrl,
  endpointUrlErrorCodes,
  forbiddenAddressRange,
  isConfigurationError,
} from '../../../src/index.js';
import { isFourPartDecimal } from '../../../src/internal/four-part-decimal.js';
import { thrown } from '../../support/thrown.js';

const codesOf = (url: string, options = {}) => {
  const result = checkEndpointUrl(url, options);
  return result.ok ? [] : result.errors.map((e) => e.code);
};

describe('endpointUrl policy', () => {
  it.each([
    ['https://hooks.example.com/webhooks', 'https://hooks.example.com/webhooks'],
    ['HTTPS://Hooks.Example.COM:8443/in?x=1', 'https://hooks.example.com:8443/in?x=1'],
    ['https://8.8.8.8/in', 'https://8.8.8.8/in'],
    ['https://[2606:4700::1111]/in', 'https://[2606:4700::1111]/in'],
    ['https://localhost.example.com/', 'https://localhost.example.com/'],
  ])('accepts %s and stores %s', (input, stored) => {
    expect(checkEndpointUrl(input)).toEqual({ ok: true, value: stored });
  });

  it.each([
    // scheme, shape, parts
    ['http://hooks.example.com/', 'url_scheme_not_allowed'],
    ['ftp://hooks.example.com/', 'url_scheme_not_allowed'],
    ['/relative/path', 'url_invalid'],
    ['hooks.example.com/in', 'url_invalid'],
    ['', 'url_invalid'],
    [' https://hooks.example.com/', 'url_invalid'],
    ['https://hooks.example.com/a b', 'url_invalid'],
    ['https://hooks.example.com/\n', 'url_invalid'],
    ['https://', 'url_invalid'],
    ['https://user:secret@hooks.example.com/', 'url_has_userinfo'],
    ['https://user@hooks.example.com/', 'url_has_userinfo'],
    ['https://hooks.example.com/in#part', 'url_has_fragment'],
    ['https://hooks.example.com/in#', 'url_has_fragment'],
    [`https://hooks.example.com/${'a'.repeat(2048)}`, 'url_too_long'],
    // loopback in every spelling the WHATWG parser accepts
    ['https://127.0.0.1/', 'url_forbidden_address'],
    ['https://127.1/', 'url_forbidden_address'],
    ['https://0x7f.1/', 'url_forbidden_address'],
    ['https://0177.0.0.1/', 'url_forbidden_address'],
    ['https://2130706433/', 'url_forbidden_address'],
    ['https://127.0.0.1./', 'url_forbidden_address'],
    ['https://[::1]/', 'url_forbidden_address'],
    ['https://[::ffff:127.0.0.1]/', 'url_forbidden_address'],
    ['https://[0:0:0:0:0:ffff:7f00:1]/', 'url_forbidden_address'],
    ['https://[::127.0.0.1]/', 'url_forbidden_address'],
    ['https://localhost/', 'url_forbidden_host'],
    ['https://LOCALHOST./', 'url_forbidden_host'],
    ['https://api.localhost/', 'url_forbidden_host'],
    // private, link-local, unspecified, metadata
    ['https://10.0.0.1/', 'url_forbidden_address'],
    ['https://172.16.5.4/', 'url_forbidden_address'],
    ['https://192.168.1.1/', 'url_forbidden_address'],
    ['https://[::ffff:192.168.1.1]/', 'url_forbidden_address'],
    ['https://169.254.1.1/', 'url_forbidden_address'],
    ['https://[fe80::1]/', 'url_forbidden_address'],
    ['https://0.0.0.0/', 'url_forbidden_address'],
    ['https://0/', 'url_forbidden_address'],
    ['https://[::]/', 'url_forbidden_address'],
    ['https://169.254.169.254/latest/meta-data/', 'url_forbidden_address'],
    ['https://[fd00:ec2::254]/', 'url_forbidden_address'],
    ['https://[fc00::1]/', 'url_forbidden_address'],
    ['https://100.64.0.1/', 'url_forbidden_address'],
    ['https://224.0.0.1/', 'url_forbidden_address'],
    ['https://[64:ff9b::7f00:1]/', 'url_forbidden_address'],
  ])('refuses %s with %s', (input, code) => {
    expect(codesOf(input)).toEqual([code]);
  });

  it.each([42, null, undefined, ['https://hooks.example.com/']])(
    'refuses the non-string %j',
    (input) => {
      expect(codesOf(input as never)).toEqual(['url_invalid']);
    },
  );

  it('reports every rule a URL breaks at once', () => {
    expect(codesOf('http://u:p@[::ffff:10.0.0.1]/#x')).toEqual([
      'url_scheme_not_allowed',
      'url_has_userinfo',
      'url_has_fragment',
      'url_forbidden_address',
    ]);
  });

  it('accepts http only when allowed, and never a forbidden address even then', () => {
    expect(codesOf('http://hooks.example.com/', { allowHttp: true })).toEqual([]);
    expect(codesOf('http://0x7f.1/', { allowHttp: true })).toEqual(['url_forbidden_address']);
    expect(codesOf('ftp://hooks.example.com/', { allowHttp: true })).toEqual([
      'url_scheme_not_allowed',
    ]);
  });

  it('accepts allow-listed address literals (tests, private deployments), and only those', () => {
    const options = { allowHttp: true, allow: ['127.0.0.1', '10.1.0.0/16'] };
    expect(codesOf('http://127.0.0.1:8080/in', options)).toEqual([]);
    expect(codesOf('http://[::ffff:10.1.2.3]/in', options)).toEqual([]);
    expect(codesOf('http://127.0.0.2/in', options)).toEqual(['url_forbidden_address']);
    expect(codesOf('http://localhost/in', options)).toEqual(['url_forbidden_host']);
  });

  it('bounds the length as configured', () => {
    expect(codesOf('https://hooks.example.com/abc', { maxLength: 29 })).toEqual([]);
    expect(codesOf('https://hooks.example.com/abcd', { maxLength: 29 })).toEqual(['url_too_long']);
  });

  it('messages name the address range and what to do', () => {
    const result = checkEndpointUrl('https://[::ffff:127.0.0.1]/');
    expect(result.ok ? '' : result.errors[0]?.message).toMatch(/loopback range.*public addresses/);
  });

  it('never throws and only returns its own codes, for anything', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.webUrl({ withFragments: true, withQueryParameters: true }),
          fc.anything(),
        ),
        (input) => {
          const result = checkEndpointUrl(input);
          if (!result.ok) {
            expect(result.errors.length).toBeGreaterThan(0);
            for (const error of result.errors) expect(endpointUrlErrorCodes).toContain(error.code);
          }
        },
      ),
    );
  });
});

describe('endpointUrl policy: its options', () => {
  it.each([
    ['options null', null, 'invalid_option'],
    ['options a string', 'https', 'invalid_option'],
    ['allow a string', { allow: '10.0.0.0/8' }, 'invalid_address_allow_list'],
    ['allow holding no address', { allow: ['localhost'] }, 'invalid_address_allow_list'],
  ])('refuses %s with a ConfigurationError, whatever the URL', (_, options, code) => {
    fc.assert(
      fc.property(fc.oneof(fc.webUrl(), fc.string(), fc.anything()), (input) => {
        const error = thrown(() => checkEndpointUrl(input, options as never));
        expect(isConfigurationError(error) && error.code).toBe(code);
      }),
      { numRuns: 50 },
    );
  });
});

describe('forbiddenAddressRange', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['[::1]', 'loopback'],
    ['10.1.2.3', 'private'],
    ['fe80::1', 'linkLocal'],
    ['fd12::1', 'uniqueLocal'],
    ['0.0.0.0', 'unspecified'],
    ['169.254.169.254', 'metadata'],
    ['fd00:ec2::254', 'metadata'],
    ['::7f00:1', 'ipv4Compatible'],
    ['2001:db8::1', 'reserved'],
    ['hooks.example.com', 'notAnAddress'],
    ['8.8.8.8', undefined],
    ['2606:4700::1111', undefined],
  ])('%s is %s', (address, range) => {
    expect(forbiddenAddressRange(address)).toBe(range);
  });

  it('judges an IPv4-mapped IPv6 address as the IPv4 address it carries', () => {
    fc.assert(
      fc.property(fc.ipV4(), (ipv4) => {
        expect(forbiddenAddressRange(`::ffff:${ipv4}`)).toBe(forbiddenAddressRange(ipv4));
      }),
    );
  });
});

describe('isFourPartDecimal', () => {
  it('answers as ipaddr.IPv4.isValidFourPartDecimal for every host, names and numbers alike', () => {
    const part = fc.oneof(
      fc.nat(300).map(String),
      fc.constantFrom('00', '01', '0x7f', '256', '4294967296', '', 'a', '-1', '1e2'),
    );
    const host = fc.oneof(
      fc.array(part, { minLength: 1, maxLength: 6 }).map((parts) => parts.join('.')),
      fc.domain(),
      fc.string(),
    );
    fc.assert(
      fc.property(host, (h) => {
        expect(isFourPartDecimal(h)).toBe(ipaddr.IPv4.isValidFourPartDecimal(h));
      }),
      { numRuns: 2_000 },
    );
  });
});
