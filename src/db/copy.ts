import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { from as copyFrom, to as copyTo } from 'pg-copy-streams';
import type { Conn } from './pool.js';

/**
 * PostgreSQL's binary COPY format, both ways, for bulk reads and writes that would cost more as
 * rows through the query protocol (the analytics fold moves millions of rows per round). Binary,
 * not text: no number or timestamp is formatted or parsed, and timestamps keep their microseconds.
 *
 * Epochs are PostgreSQL's own: a date is days and a timestamptz microseconds since 2000-01-01 UTC.
 */

const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');
const INT4_OID = 23;
const TIMESTAMPTZ_OID = 1184;

/** Builds a binary COPY payload row by row; the buffer grows as needed. */
export class CopyWriter {
  private buf: Buffer;
  private view: DataView;
  private pos: number;
  rows = 0;

  constructor(initialBytes = 1 << 16) {
    this.buf = Buffer.allocUnsafe(Math.max(64, initialBytes));
    this.view = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.length);
    SIGNATURE.copy(this.buf, 0);
    this.view.setInt32(11, 0); // flags
    this.view.setInt32(15, 0); // header extension length
    this.pos = 19;
  }

  private room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
    this.view = new DataView(next.buffer, next.byteOffset, next.length);
  }

  /** Starts a row of `fields` columns. */
  row(fields: number): this {
    this.room(2);
    this.view.setInt16(this.pos, fields);
    this.pos += 2;
    this.rows++;
    return this;
  }

  null(): this {
    this.room(4);
    this.view.setInt32(this.pos, -1);
    this.pos += 4;
    return this;
  }

  /** 16 bytes of `src` at `off`. */
  uuid(src: Uint8Array, off: number): this {
    this.room(20);
    this.view.setInt32(this.pos, 16);
    const b = this.buf;
    const p = this.pos + 4;
    for (let k = 0; k < 16; k++) b[p + k] = src[off + k];
    this.pos += 20;
    return this;
  }

  text(s: string | null): this {
    if (s === null) return this.null();
    this.room(4 + 3 * s.length);
    const n = this.buf.write(s, this.pos + 4);
    this.view.setInt32(this.pos, n);
    this.pos += 4 + n;
    return this;
  }

  /** A whole row of another binary COPY (its field count and fields), as read: buf[start..end). */
  rawRow(buf: Uint8Array, start: number, end: number): this {
    this.room(end - start);
    this.buf.set(buf.subarray(start, end), this.pos);
    this.pos += end - start;
    this.rows++;
    return this;
  }

  /** Fields already encoded (each a length and its bytes): a row's constant leading columns, an interned text. */
  raw(fields: Uint8Array): this {
    this.room(fields.length);
    this.buf.set(fields, this.pos);
    this.pos += fields.length;
    return this;
  }

  /** Raw bytes as a text (or json) value. */
  bytes(src: Uint8Array | null): this {
    if (src === null) return this.null();
    this.room(4 + src.length);
    this.view.setInt32(this.pos, src.length);
    this.buf.set(src, this.pos + 4);
    this.pos += 4 + src.length;
    return this;
  }

  int2(v: number): this {
    this.room(6);
    this.view.setInt32(this.pos, 2);
    this.view.setInt16(this.pos + 4, v);
    this.pos += 6;
    return this;
  }

  int4(v: number): this {
    this.room(8);
    this.view.setInt32(this.pos, 4);
    this.view.setInt32(this.pos + 4, v);
    this.pos += 8;
    return this;
  }

  /** A row address (ctid): block and item number. */
  tid(block: number, item: number): this {
    this.room(10);
    this.view.setInt32(this.pos, 6);
    this.view.setUint32(this.pos + 4, block);
    this.view.setUint16(this.pos + 8, item);
    this.pos += 10;
    return this;
  }

  /** A date, as days since 2000-01-01. */
  date(day: number): this {
    return this.int4(day);
  }

  /** An int8 or timestamptz (microseconds since 2000-01-01); exact for |v| < 2^53. */
  int8(v: number): this {
    this.room(12);
    this.view.setInt32(this.pos, 8);
    writeInt64(this.view, this.pos + 4, v);
    this.pos += 12;
    return this;
  }

  float8(v: number): this {
    this.room(12);
    this.view.setInt32(this.pos, 8);
    this.view.setFloat64(this.pos + 4, v);
    this.pos += 12;
    return this;
  }

  /** A one-dimensional int4[] of `values[from..to)`. */
  int4Array(values: ArrayLike<number>, from = 0, to = values.length): this {
    return this.array(INT4_OID, 4, values, from, to);
  }

  /** A one-dimensional timestamptz[] of `values[from..to)` (microseconds since 2000-01-01). */
  tsArray(values: ArrayLike<number>, from = 0, to = values.length): this {
    return this.array(TIMESTAMPTZ_OID, 8, values, from, to);
  }

  private array(oid: number, width: 4 | 8, values: ArrayLike<number>, from: number, to: number): this {
    const n = to - from;
    const body = n === 0 ? 12 : 20 + n * (4 + width);
    this.room(4 + body);
    const v = this.view;
    let p = this.pos;
    v.setInt32(p, body);
    v.setInt32(p + 4, n === 0 ? 0 : 1); // dimensions
    v.setInt32(p + 8, 0); // no nulls
    v.setInt32(p + 12, oid);
    p += 16;
    if (n > 0) {
      v.setInt32(p, n);
      v.setInt32(p + 4, 1); // lower bound
      p += 8;
      for (let i = from; i < to; i++) {
        v.setInt32(p, width);
        if (width === 4) v.setInt32(p + 4, values[i]);
        else writeInt64(v, p + 4, values[i]);
        p += 4 + width;
      }
    }
    this.pos = p;
    return this;
  }

  /** The payload with its trailer. */
  finish(): Buffer {
    this.room(2);
    this.view.setInt16(this.pos, -1);
    return this.buf.subarray(0, this.pos + 2);
  }
}

function writeInt64(v: DataView, p: number, x: number): void {
  const hi = Math.floor(x / 4294967296);
  v.setInt32(p, hi);
  v.setUint32(p + 4, x - hi * 4294967296);
}

/** Reads an int8 / timestamptz field at `p` as a number (exact below 2^53). */
export function readInt64(b: Buffer, p: number): number {
  return b.readInt32BE(p) * 4294967296 + b.readUInt32BE(p + 4);
}

/**
 * `COPY <table (cols)> FROM STDIN (FORMAT binary)` of the writer's rows. Nothing is sent for a
 * writer without rows.
 */
export async function copyIn(tx: Conn, target: string, w: CopyWriter): Promise<number> {
  if (w.rows === 0) return 0;
  const rows = w.rows;
  await pipeline(Readable.from([w.finish()]), tx.query(copyFrom(`COPY ${target} FROM STDIN (FORMAT binary)`)));
  return rows;
}

/**
 * One row of a binary COPY: `off[i]` is where field i's bytes start in `buf` and `len[i]` their
 * length (-1 for NULL). Valid only during the callback.
 */
export interface CopyRow {
  buf: Buffer;
  off: Int32Array;
  len: Int32Array;
  /** The whole row: buf[start..end). */
  start: number;
  end: number;
}

/**
 * `COPY (<query>) TO STDOUT (FORMAT binary)`, calling `onRow` for every row as the data streams in
 * (a round's events do not have to fit in one buffer). Returns the row count.
 */
export async function copyOut(tx: Conn, query: string, onRow: (r: CopyRow) => void): Promise<number> {
  const stream = tx.query(copyTo(`COPY (${query}) TO STDOUT (FORMAT binary)`));
  const row: CopyRow = { buf: Buffer.alloc(0), off: new Int32Array(64), len: new Int32Array(64), start: 0, end: 0 };
  let headerDone = false;
  let count = 0;

  /** Consumes the header and up to `max` complete rows of `buf` from `p`; returns where it stopped. */
  const parse = (buf: Buffer, p: number, max: number): number => {
    const end = buf.length;
    if (!headerDone) {
      if (end - p < 19 || end - p < 19 + buf.readInt32BE(p + 15)) return p;
      p += 19 + buf.readInt32BE(p + 15);
      headerDone = true;
    }
    row.buf = buf;
    for (let rows = 0; rows < max && p + 2 <= end; rows++) {
      const fields = buf.readInt16BE(p);
      if (fields === -1) return end; // the trailer
      let q = p + 2;
      for (let f = 0; f < fields; f++) {
        if (q + 4 > end) return p;
        const n = buf.readInt32BE(q);
        row.off[f] = q + 4;
        row.len[f] = n;
        q += 4 + (n > 0 ? n : 0);
        if (q > end) return p;
      }
      row.start = p;
      row.end = q;
      onRow(row);
      count++;
      p = q;
    }
    return p;
  };

  // A row cut by the end of a chunk is completed from the next chunk's first bytes: joining whole
  // chunks copied every byte of the COPY once more.
  let rest: Buffer | null = null;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    let p = 0;
    if (rest && !headerDone) {
      // The header itself was cut (only ever the first bytes): the two are joined whole.
      const joined = Buffer.concat([rest, chunk]);
      const q = parse(joined, 0, Infinity);
      rest = q < joined.length ? joined.subarray(q) : null;
      continue;
    }
    if (rest) {
      const before: Buffer = rest;
      for (let take = Math.min(chunk.length, 4096); ; take = Math.min(chunk.length, take * 4)) {
        const joined = Buffer.concat([before, chunk.subarray(0, take)]);
        const q = parse(joined, 0, 1);
        if (q > before.length) {
          p = q - before.length;
          rest = null;
          break;
        }
        if (take === chunk.length) {
          rest = joined;
          break;
        }
      }
      if (rest) continue;
    }
    const q = parse(chunk, p, Infinity);
    rest = q < chunk.length ? chunk.subarray(q) : null;
  }
  return count;
}

/** Calls `onRow` for every row of a whole binary COPY payload (CopyWriter.finish()). */
export function readCopyPayload(payload: Buffer, onRow: (r: CopyRow) => void): number {
  const row: CopyRow = { buf: payload, off: new Int32Array(64), len: new Int32Array(64), start: 0, end: 0 };
  let p = 19 + payload.readInt32BE(15);
  let count = 0;
  for (;;) {
    const fields = payload.readInt16BE(p);
    if (fields === -1) return count;
    let q = p + 2;
    for (let f = 0; f < fields; f++) {
      const n = payload.readInt32BE(q);
      row.off[f] = q + 4;
      row.len[f] = n;
      q += 4 + (n > 0 ? n : 0);
    }
    row.start = p;
    row.end = q;
    onRow(row);
    count++;
    p = q;
  }
}
