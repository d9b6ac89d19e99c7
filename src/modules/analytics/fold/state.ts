import { copyIn, copyOut, readInt64 } from '../../../db/copy.js';
import { CopyWriter } from '../../../db/copy-writer.js';
import type { Conn } from '../../../db/pool.js';
import type { Bucket, RoundDicts } from './events.js';
import { DEVICE_KEYS_TEMP, LOAD_DEVICES } from './sql.js';

/**
 * The stored state (an_devices) of a bucket's devices, as columns by the bucket's device index.
 * A device's active days are one sorted int4[] (`days`): day since 2000-01-01 x 64 + the day's
 * flag bits (FLAG), so a device's whole history is one row and no row per device-day is written.
 */
export class DeviceStates {
  readonly existed: Uint8Array;
  /** The row's address (ctid), where the fold's update writes it back. */
  readonly tidBlock: Int32Array;
  readonly tidItem: Int32Array;
  readonly firstTs: Float64Array;
  readonly firstDay: Int32Array;
  readonly plat: Int32Array;
  readonly ctry: Int32Array;
  /** NaN: NULL. */
  readonly lastTs: Float64Array;
  readonly hasLastSession: Uint8Array;
  /** The last session's uuid at lastSession[16 d ..]. */
  readonly lastSession: Uint8Array;
  readonly daysOff: Int32Array;
  readonly daysLen: Int32Array;
  days: Int32Array;
  private used = 0;

  constructor(readonly size: number) {
    this.existed = new Uint8Array(size);
    this.tidBlock = new Int32Array(size);
    this.tidItem = new Int32Array(size);
    this.firstTs = new Float64Array(size);
    this.firstDay = new Int32Array(size);
    this.plat = new Int32Array(size);
    this.ctry = new Int32Array(size);
    this.lastTs = new Float64Array(size);
    this.hasLastSession = new Uint8Array(size);
    this.lastSession = new Uint8Array(size * 16);
    this.daysOff = new Int32Array(size);
    this.daysLen = new Int32Array(size);
    this.days = new Int32Array(Math.max(64, size * 4));
  }

  /** Appends device d's stored days (an int4[] field at `p`). */
  setDays(d: number, b: Buffer, p: number): void {
    const dims = b.readInt32BE(p);
    const n = dims === 0 ? 0 : b.readInt32BE(p + 12);
    if (this.used + n > this.days.length) {
      const next = new Int32Array(Math.max(this.days.length * 2, this.used + n));
      next.set(this.days.subarray(0, this.used));
      this.days = next;
    }
    let q = p + 20;
    for (let k = 0; k < n; k++, q += 8) this.days[this.used + k] = b.readInt32BE(q + 4);
    this.daysOff[d] = this.used;
    this.daysLen[d] = n;
    this.used += n;
  }
}

/** Columns of LOAD_DEVICES, in order. */
const enum C {
  Tid,
  Anon,
  App,
  Env,
  Tenant,
  FirstTs,
  FirstDay,
  Platform,
  Country,
  LastTs,
  LastSession,
  Days,
}

/** Reads the stored rows of the bucket's devices (one COPY of their keys in, one of the rows out). */
export async function loadDeviceStates(tx: Conn, bucket: Bucket, dicts: RoundDicts): Promise<DeviceStates> {
  const devices = bucket.devices;
  const states = new DeviceStates(devices.size);
  const keys = new CopyWriter(devices.size * 60);
  for (let d = 0; d < devices.size; d++)
    keys
      .row(3)
      .uuid(devices.bytes, d * 16)
      .raw(dicts.appEnvs[devices.tags[d]].head2);
  await tx.query(DEVICE_KEYS_TEMP);
  await copyIn(tx, 'an_keys (anon_id, app_id, environment)', keys);
  await tx.query(`ANALYZE an_keys`);
  const utf8 = (b: Buffer, p: number, n: number) => (n < 0 ? -1 : dicts.strings.codeOf(b, p, n));
  await copyOut(tx, LOAD_DEVICES, ({ buf: b, off, len }) => {
    const ae = dicts.appEnvAt(b, off[C.App], off[C.Tenant], off[C.Env], len[C.Env]);
    const d = devices.find(b, off[C.Anon], ae);
    if (d < 0) return;
    states.existed[d] = 1;
    states.tidBlock[d] = b.readUInt32BE(off[C.Tid]);
    states.tidItem[d] = b.readUInt16BE(off[C.Tid] + 4);
    states.firstTs[d] = readInt64(b, off[C.FirstTs]);
    states.firstDay[d] = b.readInt32BE(off[C.FirstDay]);
    states.plat[d] = utf8(b, off[C.Platform], len[C.Platform]);
    states.ctry[d] = utf8(b, off[C.Country], len[C.Country]);
    states.lastTs[d] = len[C.LastTs] < 0 ? NaN : readInt64(b, off[C.LastTs]);
    if (len[C.LastSession] === 16) {
      states.hasLastSession[d] = 1;
      states.lastSession.set(b.subarray(off[C.LastSession], off[C.LastSession] + 16), d * 16);
    }
    states.setDays(d, b, off[C.Days]);
  });
  return states;
}
