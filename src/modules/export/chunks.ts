import { csvHeader, csvLine, eventJson } from './format.js';

/**
 * Output chunk size. The file is written straight into byte buffers of this size: no per-batch
 * string join and no string-to-Buffer copy at the socket (together about a third of the JSON
 * download's busy CPU in the profile before), and the memory in flight per stream is a few chunks
 * whatever the number of events.
 */
export const CHUNK_BYTES = 256 * 1024;

/** UTF-8 takes at most 3 bytes per UTF-16 code unit (a surrogate pair: 4 bytes for 2 units). */
const maxBytes = (s: string) => s.length * 3;

const COMMA_NL = Buffer.from(',\n');
const NL = Buffer.from('\n');
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const isJsonSpace = (b: number) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;

/**
 * Packs export output into fixed-size byte chunks. `push*` returns a filled chunk when the next
 * piece would not fit (the caller yields it), so a stream holds at most one chunk being filled.
 */
export class ChunkWriter {
  private buf = Buffer.allocUnsafe(CHUNK_BYTES);
  private off = 0;
  /** received_at of the previous row and its JSON tail; rows of one ingest batch share it. */
  private lastReceivedAt = '';
  private tail = Buffer.alloc(0);
  private tailEmpty = Buffer.alloc(0);

  /** The filled part of the current chunk (null when empty); a fresh chunk is started. */
  take(): Buffer | null {
    if (this.off === 0) return null;
    const full = this.buf.subarray(0, this.off);
    this.buf = Buffer.allocUnsafe(CHUNK_BYTES);
    this.off = 0;
    return full;
  }

  /** Makes room for `bytes`; returns the chunk to flush first, if any. */
  private reserve(bytes: number): Buffer | null {
    if (this.off + bytes <= this.buf.length) return null;
    const full = this.take();
    // A single piece larger than a chunk (not possible with 32 KB envelopes, but never overflow).
    if (bytes > this.buf.length) this.buf = Buffer.allocUnsafe(bytes);
    return full;
  }

  /** Any text, UTF-8 encoded. */
  pushText(s: string): Buffer | null {
    const full = this.reserve(maxBytes(s));
    this.off += this.buf.write(s, this.off);
    return full;
  }

  /** One CSV line for a stored envelope. */
  pushCsv(payload: string, receivedAt: string): Buffer | null {
    return this.pushText(csvLine(payload, receivedAt));
  }

  /**
   * One event object of the JSON array on its own line, preceded by `,\n` (the first by `\n`).
   * The stored envelope text is copied as is and `received_at` written over its closing brace;
   * anything unusual (blanks around the closing brace, a "received_at" string anywhere in the
   * envelope) goes through eventJson() itself, so the bytes are always what eventJson() produces.
   */
  pushJson(payload: string, receivedAt: string, first: boolean): Buffer | null {
    const len = payload.length;
    const last = payload.charCodeAt(len - 1);
    const before = payload.charCodeAt(len - 2);
    if (len < 2 || last !== CLOSE_BRACE || isJsonSpace(before) || payload.includes('"received_at"')) {
      const s = eventJson(payload, receivedAt);
      const full = this.reserve(maxBytes(s) + 2);
      this.off += (first ? NL : COMMA_NL).copy(this.buf, this.off);
      this.off += this.buf.write(s, this.off);
      return full;
    }
    if (receivedAt !== this.lastReceivedAt) {
      this.lastReceivedAt = receivedAt;
      this.tail = Buffer.from(`,"received_at":"${receivedAt}"}`);
      this.tailEmpty = this.tail.subarray(1);
    }
    const full = this.reserve(maxBytes(payload) + 2 + this.tail.length);
    const buf = this.buf;
    this.off += (first ? NL : COMMA_NL).copy(buf, this.off);
    // The closing brace (one byte) is overwritten by the tail; `{}` takes no comma before the new key.
    const end = this.off + buf.write(payload, this.off) - 1;
    this.off = end + (before === OPEN_BRACE ? this.tailEmpty : this.tail).copy(buf, end);
    return full;
  }
}

/**
 * The file as byte chunks from batches of [envelope text, received_at] rows: a JSON array (one
 * event per line) or CSV with its header. A chunk is yielded as soon as it is full, so the
 * consumer's back-pressure (the socket, the file) paces the batches.
 */
export async function* encodeFile(
  batches: AsyncIterable<[string, string][]>,
  format: 'json' | 'csv',
  onRows?: (n: number) => void,
): AsyncGenerator<Buffer> {
  const out = new ChunkWriter();
  const csv = format === 'csv';
  let full = out.pushText(csv ? csvHeader() : '[');
  let first = true;
  for await (const rows of batches) {
    onRows?.(rows.length);
    for (let i = 0; i < rows.length; i++) {
      if (full) yield full;
      const [p, r] = rows[i];
      full = csv ? out.pushCsv(p, r) : out.pushJson(p, r, first);
      first = false;
    }
  }
  if (full) yield full;
  if (!csv) full = out.pushText(first ? ']\n' : '\n]\n');
  if (full) yield full;
  const last = out.take();
  if (last) yield last;
}
