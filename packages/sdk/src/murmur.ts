import { BUCKETS } from './constants.js';

/** UTF-8 bytes of a string (no TextEncoder needed, so older React Native engines work too). */
export function utf8(s: string): number[] {
  const out: number[] = [];
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c >= 0xd800 && c < 0xdc00 && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d < 0xe000) {
        c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        i++;
      }
    }
    if (c < 0x80) out.push(c);
    else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 63));
    else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
  }
  return out;
}

/** MurmurHash3 x86 32-bit of the string's UTF-8 bytes, unsigned. */
export function murmur3(s: string, seed = 0): number {
  const b = utf8(s);
  const n = b.length;
  const c1 = 0xcc9e2d51;
  const c2 = 0x1b873593;
  let h = seed >>> 0;
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    let k = b[i] | (b[i + 1] << 8) | (b[i + 2] << 16) | (b[i + 3] << 24);
    k = Math.imul(k, c1);
    k = (k << 15) | (k >>> 17);
    h ^= Math.imul(k, c2);
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  let k = 0;
  switch (n & 3) {
    case 3:
      k ^= b[i + 2] << 16;
    // falls through
    case 2:
      k ^= b[i + 1] << 8;
    // falls through
    case 1:
      k ^= b[i];
      k = Math.imul(k, c1);
      k = (k << 15) | (k >>> 17);
      h ^= Math.imul(k, c2);
  }
  h ^= n;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** The contract's bucketing: murmur3(userId + ":" + experimentId) % 10000. */
export function bucketOf(userId: string, experimentId: string): number {
  return murmur3(`${userId}:${experimentId}`) % BUCKETS;
}
