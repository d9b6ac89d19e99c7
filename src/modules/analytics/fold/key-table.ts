/**
 * A hash table from (16-byte uuid, small integer tag) to dense indexes 0..size-1, for grouping a
 * fold round's events by device and by session without a JavaScript object or string per key.
 * Open addressing with each key stored in its slot, so a look-up costs one cache miss; the keys
 * are also kept by index (`bytes`, `tags`) for writing them back.
 */
const W = 6; // slot: 4 words of the uuid, tag, index + 1 (0: empty)

export class KeyTable {
  private cap: number;
  private slots: Int32Array;
  /** The uuid of index i at bytes[16 i .. 16 i + 16). */
  bytes: Uint8Array;
  tags: Int32Array;
  size = 0;

  constructor(expected = 1024) {
    this.cap = 1 << Math.ceil(Math.log2(Math.max(16, expected * 1.5)));
    this.slots = new Int32Array(this.cap * W);
    this.bytes = new Uint8Array(Math.max(16, expected) * 16);
    this.tags = new Int32Array(Math.max(16, expected));
  }

  /** The index of the uuid at buf[off..off+16) with `tag`; a new key gets the next index. */
  intern(buf: Uint8Array, off: number, tag: number): number {
    const j = this.slot(buf, off, tag);
    const s = this.slots;
    if (s[j + 5] !== 0) return s[j + 5] - 1;
    const idx = this.size++;
    if (idx >= this.tags.length) this.growKeys();
    for (let k = 0; k < 16; k++) this.bytes[idx * 16 + k] = buf[off + k];
    this.tags[idx] = tag;
    s[j] = word(buf, off);
    s[j + 1] = word(buf, off + 4);
    s[j + 2] = word(buf, off + 8);
    s[j + 3] = word(buf, off + 12);
    s[j + 4] = tag;
    s[j + 5] = idx + 1;
    if (this.size * 10 > this.cap * 7) this.rehash();
    return idx;
  }

  /** The index of a key, or -1. */
  find(buf: Uint8Array, off: number, tag: number): number {
    return this.slots[this.slot(buf, off, tag) + 5] - 1;
  }

  /** Where the key is in `slots`, or the empty slot where it would go. */
  private slot(buf: Uint8Array, off: number, tag: number): number {
    const a = word(buf, off),
      b = word(buf, off + 4),
      c = word(buf, off + 8),
      d = word(buf, off + 12);
    const mask = this.cap - 1;
    const s = this.slots;
    for (let i = hash(a, b, c, d, tag) & mask; ; i = (i + 1) & mask) {
      const j = i * W;
      if (s[j + 5] === 0 || (s[j] === a && s[j + 1] === b && s[j + 2] === c && s[j + 3] === d && s[j + 4] === tag))
        return j;
    }
  }

  /** The first 4 bytes of key i as an unsigned number: the key's place in uuid order, roughly. */
  prefix(i: number): number {
    const p = i * 16;
    const b = this.bytes;
    return ((b[p] << 24) | (b[p + 1] << 16) | (b[p + 2] << 8) | b[p + 3]) >>> 0;
  }

  /** Byte order of keys i and j (PostgreSQL's uuid order). */
  compare(i: number, j: number): number {
    const b = this.bytes;
    for (let k = 0; k < 16; k++) {
      const d = b[i * 16 + k] - b[j * 16 + k];
      if (d !== 0) return d;
    }
    return 0;
  }

  private growKeys(): void {
    const bytes = new Uint8Array(this.bytes.length * 2);
    bytes.set(this.bytes);
    this.bytes = bytes;
    const tags = new Int32Array(this.tags.length * 2);
    tags.set(this.tags);
    this.tags = tags;
  }

  private rehash(): void {
    const old = this.slots;
    this.cap *= 2;
    const mask = this.cap - 1;
    const s = (this.slots = new Int32Array(this.cap * W));
    for (let j = 0; j < old.length; j += W) {
      if (old[j + 5] === 0) continue;
      let i = hash(old[j], old[j + 1], old[j + 2], old[j + 3], old[j + 4]) & mask;
      while (s[i * W + 5] !== 0) i = (i + 1) & mask;
      s.set(old.subarray(j, j + W), i * W);
    }
  }
}

function word(b: Uint8Array, p: number): number {
  return b[p] | (b[p + 1] << 8) | (b[p + 2] << 16) | (b[p + 3] << 24);
}

/** Mixes every word: client-chosen ids may share most of their bytes (sequential or constant parts). */
function hash(a: number, b: number, c: number, d: number, tag: number): number {
  let h = Math.imul(
    a ^ Math.imul(b, 0x9e3779b1) ^ Math.imul(c, 0x85ebca6b) ^ Math.imul(d ^ tag, 0xc2b2ae35),
    0x27d4eb2f,
  );
  h ^= h >>> 15;
  h = Math.imul(h, 0x2c1b3c6d);
  return h ^ (h >>> 12);
}
