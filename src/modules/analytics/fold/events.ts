import { copyOut, readCopyPayload, readInt64, type CopyRow } from '../../../db/copy.js';
import { CopyWriter } from '../../../db/copy-writer.js';
import type { Conn } from '../../../db/pool.js';
import { KeyTable } from './key-table.js';

/**
 * A fold round's events, held in columns (typed arrays) per fold partition ("bucket"): the fold
 * groups them per device and per session in JavaScript hash tables (key-table.ts), where the
 * same grouping as SQL statements cost more than the rest of the fold together (temp tables,
 * hash aggregates and sorts over every event, several times).
 */

/**
 * Interned strings (event names, platforms, countries) of one round, with their UTF-8 bytes as a
 * COPY field (length + bytes) for the writers. Values read from a COPY are looked up by their
 * bytes: decoding a string per field and event cost more than the rest of the read.
 */
export class Dict {
  private codes = new Map<string, number>();
  private byHash = new Map<number, number>();
  readonly list: string[] = [];
  /** Code -> the value as a binary COPY field. */
  readonly fields: Uint8Array[] = [];

  code(s: string): number {
    let c = this.codes.get(s);
    if (c === undefined) {
      c = this.list.length;
      this.codes.set(s, c);
      this.list.push(s);
      const bytes = Buffer.from(s);
      const field = Buffer.alloc(4 + bytes.length);
      field.writeInt32BE(bytes.length, 0);
      bytes.copy(field, 4);
      this.fields.push(new Uint8Array(field));
    }
    return c;
  }

  /** The code of the UTF-8 value at buf[off..off+len). */
  codeOf(buf: Uint8Array, off: number, len: number): number {
    let h = len;
    for (let k = 0; k < len; k++) h = Math.imul(h ^ buf[off + k], 0x01000193);
    const c = this.byHash.get(h);
    if (c !== undefined && this.equals(c, buf, off, len)) return c;
    const code = this.code(Buffer.from(buf.buffer, buf.byteOffset + off, len).toString('utf8'));
    if (c === undefined && this.equals(code, buf, off, len)) this.byHash.set(h, code);
    return code;
  }

  private equals(c: number, buf: Uint8Array, off: number, len: number): boolean {
    const f = this.fields[c];
    if (f.length !== len + 4) return false;
    for (let k = 0; k < len; k++) if (f[4 + k] !== buf[off + k]) return false;
    return true;
  }
}

/** The text form of the uuid at b[p..p+16). */
export function uuidText(b: Uint8Array, p: number): string {
  const h = Buffer.from(b.buffer, b.byteOffset + p, 16).toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** One app environment of the round (a device or session key is a uuid tagged with it). */
export interface AppEnv {
  appId: Buffer;
  tenantId: Buffer;
  environment: string;
  /** COPY fields (tenant_id, app_id, environment) and (app_id, environment): most rows start with them. */
  head3: Uint8Array;
  head2: Uint8Array;
}

/** What the round's buckets share: the app environments and the interned strings. */
export class RoundDicts {
  readonly appEnvs: AppEnv[] = [];
  private appEnvCodes = new Map<string, number>();
  readonly names = new Dict();
  /** Platforms and countries. */
  readonly strings = new Dict();
  // The last app environment looked up by its bytes (app id, then environment): consecutive rows
  // mostly share it, and its key string is then not built again.
  private last = new Uint8Array(16 + 64);
  private lastLen = -1;
  private lastCode = -1;

  /** The code of the app environment of a COPY row's app id, tenant id and environment fields. */
  appEnvAt(b: Buffer, appOff: number, tenantOff: number, envOff: number, envLen: number): number {
    if (
      envLen === this.lastLen &&
      sameBytes(b, appOff, this.last, 0, 16) &&
      sameBytes(b, envOff, this.last, 16, envLen)
    )
      return this.lastCode;
    const code = this.appEnv(
      b.subarray(appOff, appOff + 16),
      b.subarray(tenantOff, tenantOff + 16),
      b.toString('utf8', envOff, envOff + envLen),
    );
    if (envLen <= 64) {
      this.last.set(b.subarray(appOff, appOff + 16), 0);
      this.last.set(b.subarray(envOff, envOff + envLen), 16);
      this.lastLen = envLen;
      this.lastCode = code;
    } else this.lastLen = -1;
    return code;
  }

  private appEnv(app: Uint8Array, tenant: Uint8Array, environment: string): number {
    const key = Buffer.from(app.buffer, app.byteOffset, 16).toString('hex') + environment;
    let c = this.appEnvCodes.get(key);
    if (c === undefined) {
      c = this.appEnvs.length;
      this.appEnvCodes.set(key, c);
      const uuid = (b: Uint8Array) => Buffer.concat([Buffer.from([0, 0, 0, 16]), b]);
      const env = Buffer.from(environment);
      const envField = Buffer.concat([Buffer.from([0, 0, 0, env.length]), env]);
      const appId = Buffer.from(app);
      this.appEnvs.push({
        appId,
        tenantId: Buffer.from(tenant),
        environment,
        head3: new Uint8Array(Buffer.concat([uuid(tenant), uuid(app), envField])),
        head2: new Uint8Array(Buffer.concat([uuid(app), envField])),
      });
    }
    return c;
  }
}

function sameBytes(a: Uint8Array, aOff: number, b: Uint8Array, bOff: number, n: number): boolean {
  for (let k = 0; k < n; k++) if (a[aOff + k] !== b[bOff + k]) return false;
  return true;
}

/** The events of one fold partition in a round, as columns; devices and sessions interned. */
export class Bucket {
  n = 0;
  readonly devices: KeyTable;
  readonly sessions: KeyTable;
  /** Per event: device index, session index (-1: none), day (since 2000-01-01), time (µs since 2000-01-01). */
  dev: Int32Array;
  sess: Int32Array;
  day: Int32Array;
  ts: Float64Array;
  /** Per event: name, platform and country (RoundDicts codes, -1: NULL) and flag bits (FLAG). */
  name: Int32Array;
  plat: Int32Array;
  ctry: Int32Array;
  flag: Uint8Array;
  /** Per event: its event_id at eid[16 i .. 16 i + 16). */
  eid: Uint8Array;
  /** Purchase events: index and their properties (JSON text). */
  readonly purchases: number[] = [];
  readonly purchaseProps: Buffer[] = [];

  /**
   * @param rotation where this bucket's ordered inserts start in the key space (devices.ts
   * orderByPrefix): partitions folding at the same time then insert into different index pages.
   */
  constructor(
    expected: number,
    readonly rotation = 0,
  ) {
    const cap = Math.max(64, expected);
    this.devices = new KeyTable(Math.max(64, expected >> 2));
    // Up to a session per event (the worst case): a table that grows rehashes every key.
    this.sessions = new KeyTable(Math.max(64, expected));
    this.dev = new Int32Array(cap);
    this.sess = new Int32Array(cap);
    this.day = new Int32Array(cap);
    this.ts = new Float64Array(cap);
    this.name = new Int32Array(cap);
    this.plat = new Int32Array(cap);
    this.ctry = new Int32Array(cap);
    this.flag = new Uint8Array(cap);
    this.eid = new Uint8Array(cap * 16);
  }

  /** Index for one more event. */
  next(): number {
    if (this.n === this.dev.length) this.grow();
    return this.n++;
  }

  private grow(): void {
    const cap = this.dev.length * 2;
    const g = <T extends Int32Array | Float64Array | Uint8Array>(a: T, n = cap): T => {
      const b = new (a.constructor as new (n: number) => T)(n);
      b.set(a);
      return b;
    };
    this.dev = g(this.dev);
    this.sess = g(this.sess);
    this.day = g(this.day);
    this.ts = g(this.ts);
    this.name = g(this.name);
    this.plat = g(this.plat);
    this.ctry = g(this.ctry);
    this.flag = g(this.flag);
    this.eid = g(this.eid, cap * 16);
  }
}

/** Columns of sql.ts eventsQuery, in order. */
const enum C {
  Seq,
  Part,
  Tenant,
  App,
  Env,
  EventId,
  Name,
  Ts,
  Day,
  Anon,
  Session,
  Platform,
  Country,
  Flag,
  Props,
}

/**
 * Reads events (sql.ts eventsQuery: the columns above) into the bucket of partition `part`.
 * An event of another partition is kept as its raw COPY row in `foreign[its partition]`, to be
 * forwarded to that partition's reader (workers.ts): each partition's thread reads a share of
 * the round's seq range and parses only its own events. An event at or below `skipUpTo` (events this
 * partition already folded) is left out.
 */
export class EventReader {
  readonly foreign: (CopyWriter | null)[];
  constructor(
    readonly dicts: RoundDicts,
    readonly bucket: Bucket,
    readonly part: number,
    parts: number,
    private readonly skipUpTo: number,
  ) {
    this.foreign = Array.from({ length: parts }, (_, p) => (p === part ? null : new CopyWriter()));
  }

  read(tx: Conn, query: string): Promise<number> {
    return copyOut(tx, query, this.onRow);
  }

  /** The raw rows another partition's reader forwarded (a CopyWriter payload). */
  readForwarded(payload: Buffer): number {
    return readCopyPayload(payload, this.onRow);
  }

  private onRow = (r: CopyRow): void => {
    const { buf: b, off, len } = r;
    const part = b.readInt32BE(off[C.Part]);
    if (part !== this.part) {
      this.foreign[part]!.rawRow(b, r.start, r.end);
      return;
    }
    if (readInt64(b, off[C.Seq]) <= this.skipUpTo) return;
    const bucket = this.bucket;
    const appEnv = this.dicts.appEnvAt(b, off[C.App], off[C.Tenant], off[C.Env], len[C.Env]);
    const { names, strings } = this.dicts;
    const i = bucket.next();
    bucket.dev[i] = bucket.devices.intern(b, off[C.Anon], appEnv);
    bucket.sess[i] = len[C.Session] === 16 ? bucket.sessions.intern(b, off[C.Session], appEnv) : -1;
    bucket.day[i] = b.readInt32BE(off[C.Day]);
    bucket.ts[i] = readInt64(b, off[C.Ts]);
    bucket.name[i] = names.codeOf(b, off[C.Name], len[C.Name]);
    bucket.plat[i] = len[C.Platform] < 0 ? -1 : strings.codeOf(b, off[C.Platform], len[C.Platform]);
    bucket.ctry[i] = len[C.Country] < 0 ? -1 : strings.codeOf(b, off[C.Country], len[C.Country]);
    bucket.flag[i] = b.readInt16BE(off[C.Flag]);
    const e = bucket.eid;
    const eo = off[C.EventId];
    for (let k = 0; k < 16; k++) e[i * 16 + k] = b[eo + k];
    if (len[C.Props] >= 0) {
      bucket.purchases.push(i);
      bucket.purchaseProps.push(Buffer.from(b.subarray(off[C.Props], off[C.Props] + len[C.Props])));
    }
  };
}
