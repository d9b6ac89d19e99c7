import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { from as copyFrom, to as copyTo } from 'pg-copy-streams';
import type { CopyWriter } from './copy-writer.js';
import type { Conn } from './pool.js';

/**
 * PostgreSQL's binary COPY format, both ways, for bulk reads and writes that would cost more as
 * rows through the query protocol (the analytics fold moves millions of rows per round). Binary,
 * not text: no number or timestamp is formatted or parsed, and timestamps keep their microseconds.
 * Payloads to send are built with copy-writer.ts.
 */

/** Reads an int8 / timestamptz field at `p` as a number (exact below 2^53). */
export function readInt64(b: Buffer, p: number): number {
  return b.readInt32BE(p) * 4294967296 + b.readUInt32BE(p + 4);
}

/**
 * `COPY <table (cols)> FROM STDIN (FORMAT binary)` of the writer's rows (or of a payload already
 * finished, CopyWriter.finishIn). Nothing is sent for no rows.
 */
export async function copyIn(
  tx: Conn,
  target: string,
  w: CopyWriter | { rows: number; payload: Buffer },
): Promise<number> {
  if (w.rows === 0) return 0;
  const payload = 'payload' in w ? w.payload : w.finish();
  await pipeline(Readable.from([payload]), tx.query(copyFrom(`COPY ${target} FROM STDIN (FORMAT binary)`)));
  return w.rows;
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
      if (fields > row.off.length) {
        row.off = new Int32Array(fields);
        row.len = new Int32Array(fields);
      }
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
  // After a failure in onRow the rest of the data is still read (and dropped): a COPY left unread
  // keeps the connection busy, and the caller's ROLLBACK would wait behind it for ever.
  let failure: { error: unknown } | null = null;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    if (failure) continue;
    try {
      rest = consume(chunk, rest);
    } catch (error) {
      failure = { error };
    }
  }
  if (failure) throw failure.error;
  return count;

  /** Parses the rows of `chunk` (after `rest`, a row cut by the previous chunk's end); returns the new cut row. */
  function consume(chunk: Buffer, rest: Buffer | null): Buffer | null {
    let p = 0;
    if (rest && !headerDone) {
      // The header itself was cut (only ever the first bytes): the two are joined whole.
      const joined = Buffer.concat([rest, chunk]);
      const q = parse(joined, 0, Infinity);
      return q < joined.length ? joined.subarray(q) : null;
    }
    if (rest) {
      for (let take = Math.min(chunk.length, 4096); ; take = Math.min(chunk.length, take * 4)) {
        const joined = Buffer.concat([rest, chunk.subarray(0, take)]);
        const q = parse(joined, 0, 1);
        if (q > rest.length) {
          p = q - rest.length;
          break;
        }
        if (take === chunk.length) return joined;
      }
    }
    const q = parse(chunk, p, Infinity);
    return q < chunk.length ? chunk.subarray(q) : null;
  }
}

/** Calls `onRow` for every row of a whole binary COPY payload (CopyWriter.finish()). */
export function readCopyPayload(payload: Buffer, onRow: (r: CopyRow) => void): number {
  const row: CopyRow = { buf: payload, off: new Int32Array(64), len: new Int32Array(64), start: 0, end: 0 };
  let p = 19 + payload.readInt32BE(15);
  let count = 0;
  for (;;) {
    const fields = payload.readInt16BE(p);
    if (fields === -1) return count;
    if (fields > row.off.length) {
      row.off = new Int32Array(fields);
      row.len = new Int32Array(fields);
    }
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
