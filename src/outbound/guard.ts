import dns from 'node:dns';
import net from 'node:net';
import { AppError } from '../http/errors.js';

const BLOCKED_V4: [string, number][] = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
];
const BLOCKED_V6: [string, number][] = [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  ['64:ff9b::', 96],
  ['2001:db8::', 32],
];

const blockList = new net.BlockList();
for (const [a, p] of BLOCKED_V4) blockList.addSubnet(a, p, 'ipv4');
for (const [a, p] of BLOCKED_V6) blockList.addSubnet(a, p, 'ipv6');

/** Loopback, private, link-local (cloud metadata included), reserved and multicast addresses. */
export function isPrivateAddress(address: string): boolean {
  const mapped = address.toLowerCase().match(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/);
  if (mapped) return blockList.check(mapped[1], 'ipv4');
  const family = net.isIP(address);
  if (family === 0) return true;
  return blockList.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

export class RefusedTargetError extends Error {}

/** Syntax and scheme check of a target URL; throws a 400 naming the field. */
export function parseTargetUrl(raw: string, field: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new AppError('validation_failed', `${field} is not a valid URL`, [
      { path: `/body/${field}`, message: 'must be an absolute http(s) URL' },
    ]);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new AppError('validation_failed', `${field} must use http or https`, [
      { path: `/body/${field}`, message: 'must use http or https' },
    ]);
  }
  if (url.username || url.password) {
    throw new AppError('validation_failed', `${field} must not carry credentials`, [
      { path: `/body/${field}`, message: 'must not contain user:password@' },
    ]);
  }
  return url;
}

/**
 * Resolves the host and refuses private targets (unless allowed). Used when a target is
 * configured; the same rule runs again on every send through guardedLookup.
 */
export async function assertPublicTarget(raw: string, field: string, allowPrivate: boolean): Promise<URL> {
  const url = parseTargetUrl(raw, field);
  if (allowPrivate) return url;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  let addresses: string[];
  try {
    addresses = net.isIP(host) ? [host] : (await dns.promises.lookup(host, { all: true })).map((a) => a.address);
  } catch {
    throw new AppError('validation_failed', `${field} host does not resolve`, [
      { path: `/body/${field}`, message: 'host does not resolve' },
    ]);
  }
  if (addresses.length === 0 || addresses.some(isPrivateAddress)) {
    throw new AppError('validation_failed', `${field} points to a private or internal address`, [
      { path: `/body/${field}`, message: 'private, loopback, link-local and metadata addresses are refused' },
    ]);
  }
  return url;
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | dns.LookupAddress[],
  family?: number,
) => void;

/** A dns.lookup for the socket itself: the address actually connected to is checked, so DNS rebinding cannot slip past. */
export function guardedLookup(allowPrivate: boolean) {
  return (hostname: string, options: dns.LookupOptions, callback: LookupCallback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '');
      const list = addresses as dns.LookupAddress[];
      if (!allowPrivate && list.some((a) => isPrivateAddress(a.address))) {
        return callback(new RefusedTargetError(`refused private address for ${hostname}`) as NodeJS.ErrnoException, '');
      }
      if (options.all) return callback(null, list);
      callback(null, list[0].address, list[0].family);
    });
  };
}
