/**
 * Builds PostgreSQL binary COPY payloads (copy.ts copyIn sends them). Binary, not text: no number
 * or timestamp is formatted, and timestamps keep their microseconds. Epochs are PostgreSQL's own:
 * a date is days and a timestamptz microseconds since 2000-01-01 UTC.
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
  /** Where each row starts, when the rows are to be sent in another order (finishIn). */
  private starts: number[] | null;

  /** `reorder`: keep each row's place, for finishIn. */
  constructor(initialBytes = 1 << 16, { reorder = false } = {}) {
    this.starts = reorder ? [] : null;
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
    this.starts?.push(this.pos);
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
  rawRow(buf: Buffer, start: number, end: number): this {
    this.room(end - start);
    this.starts?.push(this.pos);
    copyBytes(buf, start, end, this.buf, this.pos);
    this.pos += end - start;
    this.rows++;
    return this;
  }

  /** Fields already encoded (each a length and its bytes): a row's constant leading columns, an interned text. */
  raw(fields: Uint8Array): this {
    const n = fields.length;
    this.room(n);
    copyBytes(fields, 0, n, this.buf, this.pos);
    this.pos += n;
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

  /**
   * The payload with its rows in `order` (row numbers, each once). Rows are written in whatever
   * order is cheap to compute them in (their data's), and sent in the order the table's index
   * wants (copying each row once costs less than computing them in that order, from scattered data).
   */
  finishIn(order: Int32Array): Buffer {
    const starts = this.starts!;
    const out = Buffer.allocUnsafe(this.pos + 2);
    this.buf.copy(out, 0, 0, 19);
    let p = 19;
    for (let k = 0; k < order.length; k++) {
      const r = order[k];
      const start = starts[r];
      const end = r + 1 < starts.length ? starts[r + 1] : this.pos;
      copyBytes(this.buf, start, end, out, p);
      p += end - start;
    }
    out.writeInt16BE(-1, p);
    return out.subarray(0, p + 2);
  }

  /** The payload with its trailer. */
  finish(): Buffer {
    this.room(2);
    this.view.setInt16(this.pos, -1);
    return this.buf.subarray(0, this.pos + 2);
  }
}

/**
 * src[from..to) to dst at `at`. Rows are a few hundred bytes: a loop costs less than Buffer.copy's
 * own checks (measured: a third of a fold thread's time went to them).
 */
function copyBytes(src: Uint8Array, from: number, to: number, dst: Uint8Array, at: number): void {
  if (to - from > 512) {
    dst.set(src.subarray(from, to), at);
    return;
  }
  for (let k = from; k < to; k++) dst[at++] = src[k];
}

function writeInt64(v: DataView, p: number, x: number): void {
  const hi = Math.floor(x / 4294967296);
  v.setInt32(p, hi);
  v.setUint32(p + 4, x - hi * 4294967296);
}
