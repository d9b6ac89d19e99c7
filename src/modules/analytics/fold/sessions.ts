import { copyIn, copyOut, readInt64 } from '../../../db/copy.js';
import { CopyWriter } from '../../../db/copy-writer.js';
import type { Conn } from '../../../db/pool.js';
import type { Bucket, RoundDicts } from './events.js';
import type { Deltas } from './deltas.js';
import type { DevicePass } from './devices.js';
import { orderByPrefix } from './order.js';
import type { DeviceStates } from './state.js';
import { FIND_SESSIONS, SESSION_PROBE_TEMP } from './sql.js';

/**
 * The session pass of a partition's fold. A session is one row per session id (a distinct count
 * of `context.session_id`, decisions.md): its extent in time and days, and its device, the one of
 * its earliest event. The batch's sessions are grouped per id; only those that can already be
 * stored are looked up. In ingestion order that is a session continuing the device's last one, or
 * starting before the device's last folded event. A session id another device reported before
 * (SDK misuse) is not looked up: its insert fails on the key, and the partition's fold is retried
 * looking every session up (store.ts).
 */

export interface SessionGroups {
  start: Float64Array;
  end: Float64Array;
  startDay: Int32Array;
  endDay: Int32Array;
  /** The session's earliest event (its device owns the session). */
  owner: Int32Array;
  /** Reported by more than one device of the batch. */
  shared: Uint8Array;
}

export function groupSessions(b: Bucket): SessionGroups {
  const S = b.sessions.size;
  const g: SessionGroups = {
    start: new Float64Array(S).fill(Infinity),
    end: new Float64Array(S).fill(-Infinity),
    startDay: new Int32Array(S).fill(2147483647),
    endDay: new Int32Array(S).fill(-2147483648),
    owner: new Int32Array(S).fill(-1),
    shared: new Uint8Array(S),
  };
  const { sess, ts, day, dev, eid } = b;
  for (let i = 0; i < b.n; i++) {
    const s = sess[i];
    if (s < 0) continue;
    const t = ts[i];
    const o = g.owner[s];
    if (o >= 0 && dev[o] !== dev[i]) g.shared[s] = 1;
    if (t < g.start[s] || (t === g.start[s] && before(eid, i, o))) {
      g.start[s] = t;
      g.owner[s] = i;
    }
    if (t > g.end[s]) g.end[s] = t;
    if (day[i] < g.startDay[s]) g.startDay[s] = day[i];
    if (day[i] > g.endDay[s]) g.endDay[s] = day[i];
  }
  return g;
}

/** Whether event i's id sorts before event j's. */
function before(eid: Uint8Array, i: number, j: number): boolean {
  for (let k = 0; k < 16; k++) {
    const x = eid[i * 16 + k] - eid[j * 16 + k];
    if (x !== 0) return x < 0;
  }
  return false;
}

/** The sessions to look up: all of them (`all`), or those that can be stored already. */
export function probeKeys(b: Bucket, g: SessionGroups, st: DeviceStates, dicts: RoundDicts, all: boolean): CopyWriter {
  const w = new CopyWriter();
  const keys = b.sessions.bytes;
  for (let s = 0; s < b.sessions.size; s++) {
    const d = b.dev[g.owner[s]];
    const probe =
      all ||
      g.shared[s] === 1 ||
      (st.existed[d] === 1 &&
        (Number.isNaN(st.lastTs[d]) ||
          g.start[s] <= st.lastTs[d] ||
          (st.hasLastSession[d] === 1 &&
            Buffer.compare(keys.subarray(s * 16, s * 16 + 16), st.lastSession.subarray(d * 16, d * 16 + 16)) === 0)));
    if (!probe) continue;
    w.row(3)
      .uuid(keys, s * 16)
      .raw(dicts.appEnvs[b.sessions.tags[s]].head2);
  }
  return w;
}

export interface StoredSessions {
  found: Uint8Array;
  start: Float64Array;
  end: Float64Array;
  startDay: Int32Array;
  endDay: Int32Array;
  plat: Int32Array;
  ctry: Int32Array;
}

/** Columns of FIND_SESSIONS, in order. */
const enum C {
  Session,
  App,
  Env,
  Tenant,
  Start,
  End,
  StartDay,
  EndDay,
  Platform,
  Country,
}

/** Reads the stored extent, platform and country of the probed sessions. */
export async function findSessions(
  tx: Conn,
  b: Bucket,
  dicts: RoundDicts,
  probes: CopyWriter,
): Promise<StoredSessions> {
  const S = b.sessions.size;
  const r: StoredSessions = {
    found: new Uint8Array(S),
    start: new Float64Array(S),
    end: new Float64Array(S),
    startDay: new Int32Array(S),
    endDay: new Int32Array(S),
    plat: new Int32Array(S),
    ctry: new Int32Array(S),
  };
  if (probes.rows === 0) return r;
  await tx.query(SESSION_PROBE_TEMP);
  await copyIn(tx, 'an_probe (session_id, app_id, environment)', probes);
  await tx.query(`ANALYZE an_probe`);
  const code = (buf: Buffer, p: number, n: number) => (n < 0 ? -1 : dicts.strings.codeOf(buf, p, n));
  await copyOut(tx, FIND_SESSIONS, ({ buf, off, len }) => {
    const ae = dicts.appEnvAt(buf, off[C.App], off[C.Tenant], off[C.Env], len[C.Env]);
    const s = b.sessions.find(buf, off[C.Session], ae);
    if (s < 0) return;
    r.found[s] = 1;
    r.start[s] = readInt64(buf, off[C.Start]);
    r.end[s] = readInt64(buf, off[C.End]);
    r.startDay[s] = buf.readInt32BE(off[C.StartDay]);
    r.endDay[s] = buf.readInt32BE(off[C.EndDay]);
    r.plat[s] = code(buf, off[C.Platform], len[C.Platform]);
    r.ctry[s] = code(buf, off[C.Country], len[C.Country]);
  });
  return r;
}

export interface SessionPass {
  /** an_sessions rows of new sessions, in key order. */
  inserts: { rows: number; payload: Buffer };
  /** an_sw rows: stored sessions the batch widens. */
  widened: CopyWriter;
}

/**
 * New sessions enter the session histogram under their device's platform and country (after the
 * batch); a stored one the batch widens leaves its cell with its stored extent and enters the
 * widened one (its platform and country stay the stored ones). Sessions are visited in the order
 * of their arrays, and the new rows sent in key order (CopyWriter.finishIn).
 */
export function foldSessions(
  b: Bucket,
  g: SessionGroups,
  stored: StoredSessions,
  pass: DevicePass,
  dicts: RoundDicts,
  deltas: Deltas,
): SessionPass {
  const S = b.sessions.size;
  const keys = b.sessions.bytes;
  const fields = dicts.strings.fields;
  const w = new CopyWriter(S * 160, { reorder: true });
  const widened = new CopyWriter();
  const rowSession = new Int32Array(S);
  for (let s = 0; s < S; s++) {
    const ae = dicts.appEnvs[b.sessions.tags[s]];
    if (stored.found[s]) {
      const start = Math.min(g.start[s], stored.start[s]);
      const end = Math.max(g.end[s], stored.end[s]);
      const sd = Math.min(g.startDay[s], stored.startDay[s]);
      const ed = Math.max(g.endDay[s], stored.endDay[s]);
      if (start === stored.start[s] && end === stored.end[s] && sd === stored.startDay[s] && ed === stored.endDay[s])
        continue;
      const seg = deltas.seg(b.sessions.tags[s], stored.plat[s], stored.ctry[s]);
      deltas.session1(seg, stored.startDay[s], stored.endDay[s], -1, -(stored.end[s] - stored.start[s]) / 1e6);
      deltas.session1(seg, sd, ed, 1, (end - start) / 1e6);
      widened
        .row(7)
        .uuid(keys, s * 16)
        .raw(ae.head2)
        .int8(start)
        .int8(end)
        .date(sd)
        .date(ed);
      continue;
    }
    const d = b.dev[g.owner[s]];
    deltas.session1(pass.seg[d], g.startDay[s], g.endDay[s], 1, (g.end[s] - g.start[s]) / 1e6);
    rowSession[w.rows] = s;
    w.row(11)
      .raw(ae.head3)
      .uuid(keys, s * 16)
      .uuid(b.devices.bytes, d * 16);
    if (pass.plat[d] < 0) w.null();
    else w.raw(fields[pass.plat[d]]);
    if (pass.ctry[d] < 0) w.null();
    else w.raw(fields[pass.ctry[d]]);
    w.int8(g.start[s]).int8(g.end[s]).date(g.startDay[s]).date(g.endDay[s]);
  }
  const order = orderByPrefix(w.rows, (r) => b.sessions.prefix(rowSession[r]), b.rotation);
  return { inserts: { rows: w.rows, payload: w.finishIn(order) }, widened };
}
