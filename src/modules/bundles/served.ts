import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import type { BundleMeta, StoredBundle } from './store.js';

const gzip = promisify(zlib.gzip);
const brotli = promisify(zlib.brotliCompress);

export type Encoding = 'br' | 'gzip' | 'identity';
/** Below this a compressed body saves too little to be worth the CPU on either side. */
const MIN_COMPRESS_BYTES = 1024;

/** One version, ready to serve: exact bytes, strong ETags, compressed variants made once on demand. */
export interface Served {
  version: number;
  generatedAt: string;
  sdkMinVersion: string;
  body: Buffer;
  etag: string;
  /** A string, not a Buffer: Node then writes headers and body in one syscall instead of a writev of two. */
  versionBody: string;
  versionEtag: string;
  compressed: Partial<Record<'br' | 'gzip', Promise<Buffer>>>;
}

const hash = (b: Buffer | string) => createHash('sha256').update(b).digest('base64url').slice(0, 16);

/** Public shape of a bundle's metadata (no content). */
export function metaView(m: BundleMeta) {
  return {
    bundle_version: m.bundle_version,
    sdk_min_version: m.sdk_min_version,
    size_bytes: m.size_bytes,
    generated_at: m.generated_at.toISOString(),
  };
}

/** `{ data: bundle }` built by concatenation: the stored content text is served byte for byte. */
export function bundleBytes(b: StoredBundle): Buffer {
  const head = JSON.stringify(metaView(b));
  return Buffer.from(`{"data":${head.slice(0, -1)},"content":${b.content}}}`);
}

export function toServed(b: StoredBundle): Served {
  const body = bundleBytes(b);
  const versionBody = JSON.stringify({
    data: {
      bundle_version: b.bundle_version,
      sdk_min_version: b.sdk_min_version,
      generated_at: b.generated_at.toISOString(),
    },
  });
  return {
    version: b.bundle_version,
    generatedAt: b.generated_at.toISOString(),
    sdkMinVersion: b.sdk_min_version,
    body,
    // The version is in the tag so a glance tells which bundle a client holds; the hash makes the
    // tag unique across apps (all apps share one URL; the key picks the app).
    etag: `"b${b.bundle_version}-${hash(body)}"`,
    versionBody,
    versionEtag: `"v${b.bundle_version}-${hash(versionBody)}"`,
    compressed: {},
  };
}

/** Picks br, then gzip, when the client accepts them (q > 0); identity otherwise. */
export function negotiate(acceptEncoding: string | undefined, size: number): Encoding {
  if (!acceptEncoding || size < MIN_COMPRESS_BYTES) return 'identity';
  let br = false;
  let gz = false;
  for (const part of acceptEncoding.slice(0, 512).split(',')) {
    const [token, ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    if (q !== undefined && !(Number(q.slice(2)) > 0)) continue;
    if (token === 'br') br = true;
    else if (token === 'gzip' || token === 'x-gzip') gz = true;
    else if (token === '*') (br = true), (gz = true);
  }
  return br ? 'br' : gz ? 'gzip' : 'identity';
}

/** Compressed variant of a version, computed once and shared by every later request. */
export function variant(s: Served, enc: 'br' | 'gzip'): Promise<Buffer> {
  let p = s.compressed[enc];
  if (!p) {
    p =
      enc === 'br'
        ? brotli(s.body, {
            params: {
              [zlib.constants.BROTLI_PARAM_QUALITY]: 9,
              [zlib.constants.BROTLI_PARAM_SIZE_HINT]: s.body.length,
            },
          })
        : gzip(s.body, { level: 9 });
    // A failed compression is retried by the next request rather than cached.
    p.catch(() => delete s.compressed[enc]);
    s.compressed[enc] = p;
  }
  return p;
}

/** Encoded variants carry their own strong tag (RFC 9110: a different representation). */
export const taggedFor = (etag: string, enc: Encoding) =>
  enc === 'identity' ? etag : `${etag.slice(0, -1)}-${enc === 'br' ? 'br' : 'gz'}"`;

export const JSON_UTF8 = 'application/json; charset=utf-8';

/**
 * The version check's answer, the one definition both paths that send it use (the route in
 * routes.ts, the raw server's fast path in version-fast-path.ts): 304 with the tag when the client
 * holds this version, else the prepared body. Headers as a flat name, value list.
 */
export function versionAnswer(s: Served, ifNoneMatch: string | undefined): { status: 200 | 304; headers: string[] } {
  if (matches(ifNoneMatch, s.versionEtag))
    return { status: 304, headers: ['cache-control', 'no-cache', 'etag', s.versionEtag] };
  return { status: 200, headers: ['cache-control', 'no-cache', 'etag', s.versionEtag, 'content-type', JSON_UTF8] };
}

/** If-None-Match uses the weak comparison; a tag of any encoding of this version matches. */
export function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  const base = etag.slice(1, -1);
  for (const raw of ifNoneMatch.slice(0, 2048).split(',')) {
    let t = raw.trim();
    if (t === '*') return true;
    if (t.startsWith('W/')) t = t.slice(2);
    if (!t.startsWith('"') || !t.endsWith('"')) continue;
    t = t.slice(1, -1).replace(/-(br|gz)$/, '');
    if (t === base) return true;
  }
  return false;
}
