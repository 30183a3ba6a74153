import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';
import { ValidationError } from '../../errors.js';

/** An IP address as its bytes: 4 for IPv4, 16 for IPv6. */
interface Ip {
  family: 4 | 6;
  bytes: Uint8Array;
}

interface Cidr {
  ip: Ip;
  prefix: number;
}

/** IPv4 ranges a step must not reach unless allowlisted. The first match names the reason. */
const V4_REFUSED: [string, string][] = [
  ['0.0.0.0/8', 'an unspecified ("this network") address'],
  ['10.0.0.0/8', 'a private address'],
  ['100.64.0.0/10', 'a shared (CGNAT) address'],
  ['127.0.0.0/8', 'a loopback address'],
  ['169.254.169.254/32', 'a link-local address (the cloud metadata service)'],
  ['169.254.0.0/16', 'a link-local address'],
  ['172.16.0.0/12', 'a private address'],
  ['192.0.0.0/24', 'a reserved (IETF protocol) address'],
  ['192.0.2.0/24', 'a reserved (documentation) address'],
  ['192.88.99.0/24', 'a reserved (6to4 relay) address'],
  ['192.168.0.0/16', 'a private address'],
  ['198.18.0.0/15', 'a reserved (benchmarking) address'],
  ['198.51.100.0/24', 'a reserved (documentation) address'],
  ['203.0.113.0/24', 'a reserved (documentation) address'],
  ['224.0.0.0/4', 'a multicast address'],
  ['255.255.255.255/32', 'the broadcast address'],
  ['240.0.0.0/4', 'a reserved address'],
];

/**
 * IPv6 prefixes that carry an IPv4 address, which then decides: `[prefix, label, offset of the IPv4 bytes, xor]`.
 * `::` and `::1` are classified before the IPv4-compatible `::/96`. Teredo obfuscates the client address (xor 0xff).
 */
const V6_EMBEDDING: [string, string, number, number][] = [
  ['::ffff:0:0/96', 'IPv4-mapped', 12, 0],
  ['::/96', 'IPv4-compatible', 12, 0],
  ['64:ff9b::/96', 'NAT64', 12, 0],
  ['2002::/16', '6to4', 2, 0],
  ['2001::/32', 'Teredo', 12, 0xff],
];

const V6_REFUSED: [string, string][] = [
  ['::/128', 'an unspecified address'],
  ['::1/128', 'a loopback address'],
  ['64:ff9b:1::/48', 'a local-use NAT64 address'],
  ['100::/64', 'a reserved (discard) address'],
  ['2001:db8::/32', 'a reserved (documentation) address'],
  ['fc00::/7', 'a unique-local address'],
  ['fe80::/10', 'a link-local address'],
  ['fec0::/10', 'a site-local address'],
  ['ff00::/8', 'a multicast address'],
];

/** Only 2000::/3 is allocated for global unicast; the rest of the IPv6 space is reserved. */
const V6_GLOBAL_UNICAST = '2000::/3';

/**
 * The entries of `RUNLEDGER_HTTP_ALLOW` (comma- or space-separated): hostnames (matched exactly,
 * case-insensitively, IDNs as punycode), IP addresses, or CIDRs. Throws a ValidationError naming a bad entry.
 *
 * @example parseAllowlist('127.0.0.1, localhost,10.1.0.0/16') // ['127.0.0.1', 'localhost', '10.1.0.0/16']
 */
export function parseAllowlist(text: string | undefined): string[] {
  if (text === undefined) return [];
  return text
    .split(/[\s,]+/)
    .filter((entry) => entry !== '')
    .map((entry) => {
      const normalised = normaliseEntry(entry);
      if (normalised === null) {
        throw new ValidationError(
          'RUNLEDGER_HTTP_ALLOW',
          `'${entry}' is not a hostname, an IP address or a CIDR like 10.1.0.0/16`,
        );
      }
      return normalised;
    });
}

/**
 * Why `address` (an IP literal) must not be reached, or null when it is public. IPv6 forms that embed an
 * IPv4 address (mapped, compatible, NAT64, 6to4, Teredo) are classified by it. A string that is not an IP
 * address is refused too.
 *
 * @example refusedReason('10.0.0.5') // 'a private address'
 * @example refusedReason('::ffff:7f00:1') // 'a loopback address (IPv4-mapped 127.0.0.1)'
 * @example refusedReason('93.184.216.34') // null
 */
export function refusedReason(address: string): string | null {
  const ip = parseIp(address);
  if (ip === null) return 'not an IP address';
  if (ip.family === 4) return firstReason(ip, V4_REFUSED);
  const exact = firstReason(ip, V6_REFUSED.slice(0, 2));
  if (exact !== null) return exact;
  for (const [prefix, label, offset, xor] of V6_EMBEDDING) {
    if (!inCidr(ip, parseCidr(prefix)!)) continue;
    const v4: Ip = { family: 4, bytes: ip.bytes.slice(offset, offset + 4).map((byte) => byte ^ xor) };
    const reason = firstReason(v4, V4_REFUSED);
    return reason === null ? null : `${reason} (${label} ${v4.bytes.join('.')})`;
  }
  const reason = firstReason(ip, V6_REFUSED);
  if (reason !== null) return reason;
  return inCidr(ip, parseCidr(V6_GLOBAL_UNICAST)!) ? null : 'a reserved address';
}

/**
 * Whether the allowlist opens a URL's `hostname` (exact, case-insensitive; brackets of an IPv6 literal
 * ignored) or the `address` it resolved to (an IP entry or a CIDR containing it). An IPv4-mapped IPv6
 * address matches the entries of its IPv4 address.
 *
 * @example isAllowed('api.internal', '10.1.2.3', ['10.1.0.0/16']) // true
 */
export function isAllowed(hostname: string, address: string, allow: string[]): boolean {
  const host = normaliseHost(hostname);
  const ip = parseIp(address);
  const target = ip === null ? null : unmapped(ip);
  for (const raw of allow) {
    const entry = normaliseEntry(raw);
    if (entry === null) continue;
    if (entry.includes('/')) {
      const cidr = parseCidr(entry);
      if (cidr !== null && target !== null && inCidr(target, cidr)) return true;
      continue;
    }
    const entryIp = parseIp(entry);
    if (entryIp === null) {
      if (entry === host) return true;
    } else if (target !== null && sameIp(unmapped(entryIp), target)) {
      return true;
    }
  }
  return false;
}

/** The canonical form of an allowlist entry, or null when it is none of hostname, IP and CIDR. */
function normaliseEntry(raw: string): string | null {
  const entry = raw.trim().toLowerCase();
  if (entry.includes('/')) return parseCidr(entry) === null ? null : entry;
  if (parseIp(entry) !== null) return stripBrackets(entry);
  const ascii = normaliseHost(domainToASCII(entry));
  const labels = ascii.split('.');
  const valid =
    ascii.length > 0 &&
    ascii.length <= 253 &&
    labels.every((label) => /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/.test(label)) &&
    // a URL parser reads a host whose last label is a number as an IPv4 address (`2130706433`, `127.1`)
    !/^(?:\d+|0x[0-9a-f]*)$/.test(labels[labels.length - 1]!);
  return valid ? ascii : null;
}

function normaliseHost(hostname: string): string {
  return stripBrackets(hostname.trim().toLowerCase()).replace(/\.$/, '');
}

function stripBrackets(text: string): string {
  return text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
}

function parseIp(text: string): Ip | null {
  const bare = stripBrackets(text.trim());
  const version = isIP(bare);
  if (version === 4) return { family: 4, bytes: Uint8Array.from(bare.split('.'), Number) };
  if (version === 6) return { family: 6, bytes: parseIpv6(bare.replace(/%.*$/, '')) };
  return null;
}

/** The bytes of an IPv6 address whose syntax `isIP` has accepted (`::` at most once, maybe an IPv4 tail). */
function parseIpv6(text: string): Uint8Array {
  const groups = (part: string): number[] =>
    part === ''
      ? []
      : part.split(':').flatMap((group) => {
          if (!group.includes('.')) return [parseInt(group, 16)];
          const [a = 0, b = 0, c = 0, d = 0] = group.split('.').map(Number);
          return [(a << 8) | b, (c << 8) | d];
        });
  const [head = '', tail] = text.split('::');
  const before = groups(head);
  const after = tail === undefined ? [] : groups(tail);
  const all = [...before, ...new Array<number>(8 - before.length - after.length).fill(0), ...after];
  return Uint8Array.from(all.flatMap((group) => [group >> 8, group & 0xff]));
}

function parseCidr(text: string): Cidr | null {
  const match = /^([^/]+)\/(\d{1,3})$/.exec(text.trim());
  if (!match) return null;
  const ip = parseIp(match[1]!);
  const prefix = Number(match[2]);
  if (ip === null || prefix > ip.bytes.length * 8) return null;
  return { ip, prefix };
}

function inCidr(ip: Ip, cidr: Cidr): boolean {
  if (ip.family !== cidr.ip.family) return false;
  for (let bit = 0; bit < cidr.prefix; bit += 8) {
    const mask = cidr.prefix - bit >= 8 ? 0xff : (0xff << (8 - (cidr.prefix - bit))) & 0xff;
    const index = bit / 8;
    if (((ip.bytes[index]! ^ cidr.ip.bytes[index]!) & mask) !== 0) return false;
  }
  return true;
}

function sameIp(a: Ip, b: Ip): boolean {
  return a.family === b.family && a.bytes.every((byte, index) => byte === b.bytes[index]);
}

/** `::ffff:a.b.c.d` as `a.b.c.d`; any other address as it is. */
function unmapped(ip: Ip): Ip {
  return ip.family === 6 && inCidr(ip, parseCidr('::ffff:0:0/96')!) ? { family: 4, bytes: ip.bytes.slice(12) } : ip;
}

function firstReason(ip: Ip, table: [string, string][]): string | null {
  for (const [cidr, reason] of table) if (inCidr(ip, parseCidr(cidr)!)) return reason;
  return null;
}
