import pg from 'pg';
import { parentPort, workerData } from 'node:worker_threads';
// pool.js also sets the type parsers (int8 as a number) for this thread's connection.
import { inTx } from '../../../db/pool.js';
import { Bucket, EventReader, RoundDicts } from './events.js';
import { advanceState, foldTogether, lockState, prepareFold, readInto, rebuildApp } from './round.js';
import { funnelEventNames } from './sql.js';
import { foldBucket } from './bucket.js';
import type { FoldReply, FoldRequest, WorkerConfig } from './workers.js';

/**
 * A fold partition's thread (workers.ts): on its own connection it reads its share of a
 * round's seq range, keeping its partition's events and handing the others' raw rows back for
 * their partitions, then folds its partition's events in one transaction holding the partition's
 * state row. Its JavaScript (parsing, grouping, merging) runs beside the other partitions'.
 */

const config = workerData as WorkerConfig;
const client = new pg.Client({
  connectionString: config.databaseUrl,
  options: `-c temp_buffers=${Math.trunc(config.tempBuffersMb)}MB`,
});
// A lost connection fails the request in flight; the pool then replaces this thread.
client.on('error', () => undefined);
const connected = client.connect();

/** The round being read and folded. */
let round: { reader: EventReader } | null = null;

async function handle(m: FoldRequest): Promise<{ reply: FoldReply; transfer: ArrayBuffer[] }> {
  await connected;
  const times: [string, number][] = [];
  const profile = 'profile' in m && m.profile ? (k: string, ms: number) => times.push([k, ms]) : undefined;
  if (m.type === 'together') {
    const result = await foldTogether(client, { to: m.to, zone: m.zone, workMemMb: config.workMemMb, profile });
    return { reply: { id: m.id, result, times }, transfer: [] };
  }
  if (m.type === 'rebuild') {
    const folded = await rebuildApp(client, {
      appId: m.appId,
      timezone: m.timezone,
      chunk: m.chunk,
      workMemMb: config.workMemMb,
      profile,
    });
    return { reply: { id: m.id, result: { folded, watermark: 0 }, times }, transfer: [] };
  }
  if (m.type === 'read') {
    const reader = new EventReader(new RoundDicts(), new Bucket(m.expected, m.rotation), m.part, m.parts, m.skipUpTo);
    round = { reader };
    const started = performance.now();
    const rows = await inTx(client, async () => {
      await prepareFold(client, m.zone, config.workMemMb);
      return readInto(client, reader, m.query);
    });
    profile?.('read events', performance.now() - started);
    // Copied out of the writers' buffers, which may share memory with others.
    const foreign = reader.foreign.map((w) => (w && w.rows > 0 ? new Uint8Array(w.finish()) : null));
    return {
      reply: { id: m.id, rows, foreign, times },
      transfer: foreign.flatMap((f) => (f ? [f.buffer as ArrayBuffer] : [])),
    };
  }
  const r = round;
  round = null;
  if (!r) throw new Error('analytics fold worker: fold without a read');
  for (const f of m.forwarded) r.reader.readForwarded(Buffer.from(f.buffer, f.byteOffset, f.byteLength));
  const folded = await inTx(client, async () => {
    const [watermark] = await lockState(client, m.part);
    // Another process folded this partition meanwhile: its events of this round may be folded.
    if (watermark !== m.from) return null;
    await prepareFold(client, m.zone, config.workMemMb);
    const n = await foldBucket(client, r.reader.bucket, r.reader.dicts, await funnelEventNames(client), profile);
    await advanceState(client, m.part, m.to, n);
    return n;
  });
  return { reply: { id: m.id, folded: folded ?? 0, stale: folded === null, times }, transfer: [] };
}

parentPort!.on('message', (m: FoldRequest) => {
  handle(m).then(
    ({ reply, transfer }) => parentPort!.postMessage(reply, transfer),
    (e: unknown) => {
      const err = e as { message?: string; code?: string };
      parentPort!.postMessage({
        id: m.id,
        error: { message: String(err.message ?? e), code: err.code },
      } satisfies FoldReply);
    },
  );
});
