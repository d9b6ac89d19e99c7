// npm run bench:analytics-fold-profile [-- --events 1000000 --devices 100000 --chunk 5000000 --parts 2]
//
// Where the analytics fold spends its time: the service runs with ROLE=api (no fold job), the
// generated app of bench/analytics.ts is inserted, and this process folds it round by round with
// the service's own rollup store and fold threads, timing every step of each partition's fold and
// the CPU this process (the fold threads) and PostgreSQL used. Prints and records microseconds per
// event (the fold job's throughput itself is measured by bench:analytics).
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createFoldWorkers } from '../src/modules/analytics/fold/workers.js';
import { createRollupStore } from '../src/modules/analytics/store.js';
import { client, createTenant } from '../test/helpers/client.js';
import { GENERATE } from './lib/analytics-data.js';
import { machine, writeResultsSection } from './lib/results.js';
import { descendantsCpuMs, spawnService } from './lib/service.js';

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '1000000' },
    devices: { type: 'string', default: '100000' },
    'active-days': { type: 'string', default: '0' },
    chunk: { type: 'string', default: '5000000' },
    parts: { type: 'string', default: '2' },
    // The service's ANALYTICS_FOLD_WORK_MEM_MB and ANALYTICS_FOLD_TEMP_BUFFERS_MB defaults.
    'work-mem-mb': { type: 'string', default: '256' },
    'temp-buffers-mb': { type: 'string', default: '256' },
    // VACUUM the generated events before the fold: their pages' hint bits (and the full-page images
    // setting them writes after a checkpoint) are then paid outside the timed fold, as in the steady
    // state, where the fold reads pages written since the last checkpoint.
    hinted: { type: 'boolean', default: false },
  },
});
const EVENTS = Number(values.events);
const DEVICES = Number(values.devices);
/** Days each device is active on (0: its events spread over every day from its first; see bench/lib/analytics-data.ts). */
const ACTIVE_DAYS = Number(values['active-days']);
const CHUNK = Number(values.chunk);
const PARTS = Number(values.parts);

/** The last runs of the SQL fold this replaced, per data shape and --hinted. */
const BASELINE: Record<string, string> = {
  '0': '2026-11-22T06:45Z: 46,052 events/s',
  '0h': `2026-11-22T11:06Z: 60,054 events/s, 33 µs of statement time per event; its largest statements were the session inserts
(3.7 µs), the device-day grouping (3.6) and inserts (3.1), the staging read (3.4) and the funnel-step upsert (3.1)`,
  '2': '2026-11-22T06:02Z: 76,232 events/s',
  '2h': '2026-11-22T10:57Z: 135,895 events/s',
};

const service = await spawnService({ ROLE: 'api' });
const pool = new pg.Pool({ connectionString: service.databaseUrl, max: 2 });
const workers = createFoldWorkers({
  databaseUrl: service.databaseUrl,
  tempBuffersMb: Number(values['temp-buffers-mb']),
  workMemMb: Number(values['work-mem-mb']),
});
try {
  const t = await createTenant(client(service.url));
  console.log(`generating ${EVENTS.toLocaleString('en-US')} events for ${DEVICES.toLocaleString('en-US')} devices...`);
  await pool.query(GENERATE, [t.orgId, t.appId, EVENTS, DEVICES, ACTIVE_DAYS]);
  if (values.hinted) await pool.query(`VACUUM events`);
  await pool.query(`DELETE FROM an_rollup_state WHERE id >= $1`, [PARTS]);
  await pool.query(
    `INSERT INTO an_rollup_state (id) SELECT generate_series(0, $1::int - 1) ON CONFLICT (id) DO NOTHING`,
    [PARTS],
  );
  const times = new Map<string, number>();
  const store = createRollupStore(pool, {
    workers,
    parts: PARTS,
    parallelMin: 0,
    profile: (k, ms) => times.set(k, (times.get(k) ?? 0) + ms),
  });
  const max = Number(
    (await pool.query(`SELECT pg_sequence_last_value(pg_get_serial_sequence('events', 'seq')) AS m`)).rows[0].m,
  );
  const t0 = performance.now();
  const cpu0 = { fold: process.cpuUsage(), pg: descendantsCpuMs(service.pid) };
  for (let wm = 0; wm < max; ) {
    wm = (await store.foldChunk(max, CHUNK)).watermark;
    await store.analyze();
    console.log(`folded to seq ${wm} after ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
  const seconds = (performance.now() - t0) / 1000;
  const own = process.cpuUsage(cpu0.fold);
  const foldCpu = (own.user + own.system) / 1e6;
  const pgCpu = (descendantsCpuMs(service.pid) - cpu0.pg) / 1000;
  const us = (s: number) => ((s * 1e6) / EVENTS).toFixed(2);
  const rows = [...times].sort((a, b) => b[1] - a[1]).filter(([, ms]) => (ms * 1000) / EVENTS >= 0.01);
  const table = rows.map(([k, ms]) => `| ${us(ms / 1000)} | ${k} |`).join('\n');
  console.log(table);
  console.log({ seconds, foldCpu, pgCpu });
  const shape = ACTIVE_DAYS ? ` --active-days ${ACTIVE_DAYS}` : '';
  const hinted = values.hinted ? ', events vacuumed first' : '';
  writeResultsSection(
    `analytics fold profile${ACTIVE_DAYS ? `, ${ACTIVE_DAYS} active days per device` : ''}${hinted}`,
    `Command: \`npm run bench:analytics-fold-profile -- --events ${EVENTS} --devices ${DEVICES}${shape} --chunk ${CHUNK} --parts ${PARTS}${values.hinted ? ' --hinted' : ''}\` · ${machine()}
${
  values.hinted
    ? `
The generated events were vacuumed before the timed fold: their pages' hint bits, and the full-page images that setting them
writes after a checkpoint (data checksums), are paid outside it. That is the steady state, where the fold reads pages written
since the last checkpoint; bench:analytics folds the freshly bulk-loaded backlog and pays them.
`
    : `
The first round starts with the summary of the events BRIN over the whole bulk load: the first read of its pages, which sets
their hint bits (and, with data checksums, writes a full-page image of each after a checkpoint). The service's workers
summarize while data arrives (bench:analytics), so there the fold's own read pays the hint bits, in both partitions at once.
`
}
The fold of ${EVENTS.toLocaleString('en-US')} events (${DEVICES.toLocaleString('en-US')} devices, the bench:analytics data${
      ACTIVE_DAYS
        ? ` with \`--active-days ${ACTIVE_DAYS}\`: each device active on at most ${ACTIVE_DAYS} days, one session a day`
        : ''
    }) in rounds of
${CHUNK.toLocaleString('en-US')}, run from this process with the service's rollup store and fold threads (${PARTS} partitions):
**${Math.round(EVENTS / seconds).toLocaleString('en-US')} events/s** (${seconds.toFixed(1)} s). CPU: the fold threads ${us(foldCpu)} µs per event,
PostgreSQL ${us(pgCpu)} µs per event (the 120,000 events/s target is 16.7 µs of both cores per event).

Steps of each partition's fold, wall time summed over the partitions (a step's time includes waiting for the CPU the others
use), and the summary of the events BRIN before each round (the first read of a bulk load's pages, which sets their hint bits). Baseline: the SQL fold this replaced, the same command, ${BASELINE[`${ACTIVE_DAYS ? 2 : 0}${values.hinted ? 'h' : ''}`]}.

| µs per event | step |
| ---: | --- |
${table}`,
  );
} finally {
  await workers.close();
  await pool.end();
  await service.stop();
}
