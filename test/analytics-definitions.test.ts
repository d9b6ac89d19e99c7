import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  dayOf,
  DEFINITIONS_VERSION,
  FLAG,
  FLAG_COUNT,
  FLAG_ROOM,
  FLAGS,
  flagSql,
  flagsOf,
  monthlySql,
  pack,
  periodEndSql,
  RETENTION_DAYS,
  retentionBit,
} from '../src/modules/analytics/definitions.js';
import { key2, unpack2 } from '../src/modules/analytics/fold/deltas.js';
import { retBit } from '../src/modules/analytics/fold/device-cells.js';
import type { Bucket } from '../src/modules/analytics/fold/events.js';
import { groupSessions } from '../src/modules/analytics/fold/sessions.js';
import { EMPTY_RAW } from '../src/modules/analytics/read-model.js';

// Unit tests of the fold's pure parts and of the definitions they share (no database: fast).

describe('analytics definitions', () => {
  it('packs a day with its flags and unpacks both, for every flag and negative days', () => {
    const all = (1 << FLAG_COUNT) - 1;
    for (const day of [-3, 0, 1, 9000, 65535]) {
      for (const flags of [0, 1, all, (1 << FLAG_ROOM) - 1]) {
        const p = pack(day, flags);
        assert.equal(dayOf(p), day);
        assert.equal(flagsOf(p), flags);
      }
    }
    // Packed values sort by day first: the fold merges sorted day lists.
    assert.ok(pack(10, (1 << FLAG_ROOM) - 1) < pack(11, 0));
    assert.ok(FLAG_ROOM > 6, 'room for more than 6 flags');
  });

  it('gives each flag its own bit, in FLAGS order, and a read-model field', () => {
    assert.deepEqual(
      Object.values(FLAG),
      FLAGS.map((_, bit) => 1 << bit),
    );
    assert.equal(FLAG.trial, 8);
    for (const f of FLAGS) assert.equal(EMPTY_RAW[f.field], 0);
  });

  it('sets every flag from SQL for its events only, and the trial and paid bits exclusively', () => {
    const sql = flagSql();
    for (const f of FLAGS) for (const e of f.events) assert.match(sql, new RegExp(`WHEN '${e}' THEN`));
    assert.equal(sql.match(/WHEN 'purchase_completed'/g)?.length, 1, 'one arm per event');
    assert.match(
      sql,
      new RegExp(`THEN ${FLAG.trial} ELSE 0 END \\+ CASE WHEN .* IS NOT TRUE THEN ${FLAG.paid} ELSE 0 END`),
    );
  });

  it('maps retention days to mask bits, and the fold finds them by offset', () => {
    assert.deepEqual(
      RETENTION_DAYS.map(retentionBit),
      RETENTION_DAYS.map((_, i) => 1 << i),
    );
    assert.equal(retBit(7), retentionBit(7));
    for (const off of [-1, 0, 2, 8, 89, 91, 1000]) assert.equal(retBit(off), 0);
  });

  it('writes one revenue rule per period unit', () => {
    for (const u of ['D', 'W', 'M', 'Y']) {
      assert.match(periodEndSql('v'), new RegExp(`WHEN '${u}' THEN`));
      assert.match(monthlySql('v', 'u'), new RegExp(`WHEN '${u}' THEN u \\*`));
    }
  });

  it('has a version that is a digest of the definitions', () => {
    assert.match(DEFINITIONS_VERSION, /^[0-9a-f]{16}$/);
  });
});

describe('analytics fold: pure parts', () => {
  it('packs histogram cell keys losslessly, with a string key out of range', () => {
    for (const [seg, a, b] of [
      [0, 0, 0],
      [5, 9000, 100000],
      [123456, 65535, 131071],
    ]) {
      const k = key2(seg, a, 16, b, 17);
      assert.equal(typeof k, 'number');
      assert.deepEqual(unpack2(k, 16, 17), [seg, a, b]);
    }
    for (const [seg, a, b] of [
      [1, -1, 0],
      [1, 70000, 0],
      [1, 0, 200000],
    ]) {
      const k = key2(seg, a, 16, b, 17);
      assert.equal(typeof k, 'string');
      assert.deepEqual(unpack2(k, 16, 17), [seg, a, b]);
    }
    assert.notEqual(key2(1, 2, 16, 3, 17), key2(2, 2, 16, 3, 17));
  });

  it("groups a batch's events per session: extent, days, owner (earliest event, ties by event id), sharing", () => {
    // Events: session 0 from devices 0 and 1, session 1 from device 1, one event without a session.
    const eid = new Uint8Array(5 * 16);
    [4, 2, 9, 1, 3].forEach((v, i) => (eid[i * 16 + 15] = v));
    const b = {
      n: 5,
      sessions: { size: 2 },
      sess: Int32Array.from([0, 0, 1, 0, -1]),
      dev: Int32Array.from([0, 1, 1, 0, 0]),
      ts: Float64Array.from([100, 100, 50, 300, 10]),
      day: Int32Array.from([7, 7, 6, 8, 5]),
      eid,
    } as unknown as Bucket;
    const g = groupSessions(b);
    assert.deepEqual([...g.start], [100, 50]);
    assert.deepEqual([...g.end], [300, 50]);
    assert.deepEqual([...g.startDay], [7, 6]);
    assert.deepEqual([...g.endDay], [8, 6]);
    assert.deepEqual([...g.owner], [1, 2], 'tie at 100: event 1 has the smaller id');
    assert.deepEqual([...g.shared], [1, 0]);
  });
});
