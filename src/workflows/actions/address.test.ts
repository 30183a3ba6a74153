import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../errors.js';
import { isAllowed, parseAllowlist, refusedReason } from './address.js';

describe('refusedReason', () => {
  it.each([
    ['0.0.0.0', /unspecified/],
    ['0.255.1.2', /unspecified/],
    ['10.0.0.5', /^a private address$/],
    ['10.255.255.255', /private/],
    ['100.64.0.1', /CGNAT/],
    ['100.127.255.254', /CGNAT/],
    ['127.0.0.1', /^a loopback address$/],
    ['127.255.0.9', /loopback/],
    ['169.254.169.254', /link-local.*metadata/],
    ['169.254.1.1', /^a link-local address$/],
    ['172.16.0.1', /private/],
    ['172.31.255.255', /private/],
    ['192.168.1.1', /private/],
    ['192.0.2.10', /documentation/],
    ['198.18.0.1', /benchmarking/],
    ['224.0.0.1', /multicast/],
    ['239.255.255.250', /multicast/],
    ['240.0.0.1', /reserved/],
    ['255.255.255.255', /broadcast/],
  ])('refuses IPv4 %s', (address, reason) => {
    expect(refusedReason(address)).toMatch(reason);
  });

  it.each([
    ['::', /unspecified/],
    ['::1', /^a loopback address$/],
    ['0:0:0:0:0:0:0:1', /loopback/],
    ['fe80::1', /link-local/],
    ['febf:ffff::1', /link-local/],
    ['fe80::1%eth0', /link-local/],
    ['fc00::1', /unique-local/],
    ['fd12:3456:789a::1', /unique-local/],
    ['fec0::1', /site-local/],
    ['ff02::1', /multicast/],
    ['2001:db8::1', /documentation/],
    ['64:ff9b:1::a00:1', /local-use NAT64/],
    ['100::1', /discard/],
    ['::ffff:0:0:1', /reserved/],
    ['4000::1', /reserved/],
  ])('refuses IPv6 %s', (address, reason) => {
    expect(refusedReason(address)).toMatch(reason);
  });

  it.each([
    ['::ffff:127.0.0.1', 'a loopback address (IPv4-mapped 127.0.0.1)'],
    ['::ffff:7f00:1', 'a loopback address (IPv4-mapped 127.0.0.1)'],
    ['[::ffff:7f00:1]', 'a loopback address (IPv4-mapped 127.0.0.1)'],
    ['::ffff:a9fe:a9fe', 'a link-local address (the cloud metadata service) (IPv4-mapped 169.254.169.254)'],
    ['::ffff:10.0.0.1', 'a private address (IPv4-mapped 10.0.0.1)'],
    ['::127.0.0.1', 'a loopback address (IPv4-compatible 127.0.0.1)'],
    ['::7f00:1', 'a loopback address (IPv4-compatible 127.0.0.1)'],
    ['64:ff9b::10.0.0.1', 'a private address (NAT64 10.0.0.1)'],
    ['64:ff9b::a9fe:a9fe', 'a link-local address (the cloud metadata service) (NAT64 169.254.169.254)'],
    ['2002:c0a8:101::1', 'a private address (6to4 192.168.1.1)'],
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'a loopback address (Teredo 127.0.0.1)'],
  ])('classifies %s by the IPv4 address it embeds', (address, reason) => {
    expect(refusedReason(address)).toBe(reason);
  });

  it.each([
    '93.184.216.34',
    '8.8.8.8',
    '1.1.1.1',
    '172.32.0.1',
    '100.128.0.1',
    '2606:4700::1',
    '2a00:1450:4001:80b::200e',
    '::ffff:93.184.216.34',
    '64:ff9b::808:808',
  ])('lets the public address %s through', (address) => {
    expect(refusedReason(address)).toBeNull();
  });

  it('refuses what is not an IP address', () => {
    expect(refusedReason('example.com')).toBe('not an IP address');
    expect(refusedReason('0177.0.0.1')).toBe('not an IP address');
  });
});

describe('IPv4 encodings in URLs', () => {
  it.each([
    ['http://2130706433/', '127.0.0.1'],
    ['http://0x7f000001/', '127.0.0.1'],
    ['http://0177.0.0.1/', '127.0.0.1'],
    ['http://127.1/', '127.0.0.1'],
    ['http://0x7f.0.0.1/', '127.0.0.1'],
    ['http://127.0.0.1./', '127.0.0.1'],
    ['http://0/', '0.0.0.0'],
    ['http://012.1/', '10.0.0.1'],
    ['http://0xa9fea9fe/', '169.254.169.254'],
    ['http://[::ffff:127.0.0.1]/', '[::ffff:7f00:1]'],
    ['http://[0:0:0:0:0:0:0:1]/', '[::1]'],
  ])('new URL(%s) normalises the host to %s, which is refused', (url, host) => {
    const { hostname } = new URL(url);
    expect(hostname).toBe(host);
    expect(refusedReason(hostname)).not.toBeNull();
  });
});

describe('parseAllowlist', () => {
  it('reads hostnames, IP addresses and CIDRs, comma- or space-separated', () => {
    expect(
      parseAllowlist('127.0.0.1, LocalHost,10.1.0.0/16  ::1 [fd00::1] fd00::/8 api.internal. bücher.example'),
    ).toEqual([
      '127.0.0.1',
      'localhost',
      '10.1.0.0/16',
      '::1',
      'fd00::1',
      'fd00::/8',
      'api.internal',
      'xn--bcher-kva.example',
    ]);
  });

  it('is empty without a value', () => {
    expect(parseAllowlist(undefined)).toEqual([]);
    expect(parseAllowlist(' , ')).toEqual([]);
  });

  it.each([
    '10.0.0.0/33',
    '::/129',
    '10.0.0/8',
    'http://host',
    'host:8080',
    '*.example.com',
    '-bad.example',
    '2130706433',
    '127.1',
    'a..b',
  ])('names the bad entry %s', (entry) => {
    const parse = (): string[] => parseAllowlist(`localhost,${entry}`);
    expect(parse).toThrow(ValidationError);
    expect(parse).toThrow(`RUNLEDGER_HTTP_ALLOW: '${entry}' is not a hostname`);
  });
});

describe('isAllowed', () => {
  it('matches a hostname exactly and case-insensitively', () => {
    expect(isAllowed('API.Internal', '10.0.0.1', ['api.internal'])).toBe(true);
    expect(isAllowed('api.internal.', '10.0.0.1', ['API.internal'])).toBe(true);
    expect(isAllowed('x.api.internal', '10.0.0.1', ['api.internal'])).toBe(false);
    expect(isAllowed('api.internal.evil.com', '10.0.0.1', ['api.internal'])).toBe(false);
  });

  it('matches an IP entry against the resolved address, in any spelling', () => {
    expect(isAllowed('local.test', '127.0.0.1', ['127.0.0.1'])).toBe(true);
    expect(isAllowed('local.test', '127.0.0.2', ['127.0.0.1'])).toBe(false);
    expect(isAllowed('[::1]', '::1', ['0:0:0:0:0:0:0:1'])).toBe(true);
    expect(isAllowed('local.test', '::ffff:127.0.0.1', ['127.0.0.1'])).toBe(true);
    expect(isAllowed('local.test', '127.0.0.1', ['::ffff:7f00:1'])).toBe(true);
  });

  it('matches a CIDR at its bit boundary', () => {
    expect(isAllowed('h', '10.1.255.255', ['10.1.0.0/16'])).toBe(true);
    expect(isAllowed('h', '10.2.0.0', ['10.1.0.0/16'])).toBe(false);
    expect(isAllowed('h', '172.16.0.1', ['172.16.0.0/12'])).toBe(true);
    expect(isAllowed('h', '172.31.255.255', ['172.16.0.0/12'])).toBe(true);
    expect(isAllowed('h', '172.32.0.0', ['172.16.0.0/12'])).toBe(false);
    expect(isAllowed('h', '8.8.8.8', ['0.0.0.0/0'])).toBe(true);
    expect(isAllowed('h', 'fd00::1', ['fd00::/8'])).toBe(true);
    expect(isAllowed('h', 'fe80::1', ['fd00::/8'])).toBe(false);
    expect(isAllowed('h', '10.1.0.1', ['::/0'])).toBe(false);
  });

  it('allows nothing with an empty allowlist and ignores entries it cannot read', () => {
    expect(isAllowed('localhost', '127.0.0.1', [])).toBe(false);
    expect(isAllowed('localhost', '127.0.0.1', ['10.0.0.0/99', '*'])).toBe(false);
  });
});
