import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { FoldResult } from './round.js';
import type { FoldProfile } from './bucket.js';
import { eventsQuery, partOf } from './sql.js';

/**
 * The fold's threads (worker.ts), one per partition, each with its own database connection.
 * A round's JavaScript work (parsing the events, grouping them per device and session, merging them
 * into the devices' stored state) then runs on every core, beside PostgreSQL's; a partition's reads
 * and writes never wait for another partition's computation; and none of it blocks the thread that
 * serves HTTP (small rounds and rebuilds run on the first partition's thread).
 */

export interface WorkerConfig {
  databaseUrl: string;
  tempBuffersMb: number;
  workMemMb: number;
}

export type FoldRequest =
  | {
      type: 'read';
      id: number;
      query: string;
      zone: string;
      part: number;
      parts: number;
      skipUpTo: number;
      expected: number;
      rotation: number;
      profile: boolean;
    }
  | {
      type: 'fold';
      id: number;
      forwarded: Uint8Array[];
      part: number;
      from: number;
      to: number;
      zone: string;
      profile: boolean;
    }
  | { type: 'together'; id: number; to: number; zone: string; profile: boolean }
  | { type: 'rebuild'; id: number; appId: string; timezone: string; chunk: number; profile: boolean };

export type FoldReply =
  | { id: number; rows: number; foreign: (Uint8Array | null)[]; times: [string, number][] }
  | { id: number; folded: number; stale: boolean; times: [string, number][] }
  | { id: number; result: FoldResult | null; times: [string, number][] }
  | { id: number; error: { message: string; code?: string } };

type ReadReply = Extract<FoldReply, { rows: number }>;
type FoldDone = Extract<FoldReply, { folded: number }>;
type Done = Extract<FoldReply, { result: FoldResult | null }>;

// Compiled, the service runs fold-worker.js. Under tsx (tests, benches) the TypeScript source, with
// tsx's loader registered in the thread first: Node 20 does not carry --import hooks into workers.
const here = fileURLToPath(import.meta.url);
const WORKER = path.join(path.dirname(here), `worker${path.extname(here)}`);
const startWorker = (workerData: WorkerConfig) =>
  path.extname(here) === '.ts'
    ? new Worker(
        `import('tsx/esm/api').then((t) => { t.register(); return import(${JSON.stringify(pathToFileURL(WORKER).href)}); })`,
        { eval: true, workerData },
      )
    : new Worker(WORKER, { workerData });

/** An error a partition thread reported, with PostgreSQL's error code when there was one. */
class FoldWorkerError extends Error {
  constructor(
    message: string,
    readonly code?: string,
  ) {
    super(message);
  }
}

export function createFoldWorkers(config: WorkerConfig) {
  const threads: (Worker | null)[] = [];
  const pending = new Map<number, { thread: number; resolve: (r: FoldReply) => void; reject: (e: Error) => void }>();
  let next = 0;

  function thread(k: number): Worker {
    const existing = threads[k];
    if (existing) return existing;
    const w = startWorker(config);
    const fail = (e: Error) => {
      if (threads[k] === w) threads[k] = null;
      for (const [id, p] of pending) {
        if (p.thread !== k) continue;
        pending.delete(id);
        p.reject(e);
      }
    };
    w.on('message', (r: FoldReply) => {
      const p = pending.get(r.id);
      if (!p) return;
      pending.delete(r.id);
      if ([...pending.values()].every((q) => q.thread !== k)) w.unref();
      if ('error' in r) {
        // A failed request may leave the thread's connection unusable: the next round starts a new one.
        if (threads[k] === w) threads[k] = null;
        void w.terminate();
        p.reject(new FoldWorkerError(r.error.message, r.error.code));
      } else p.resolve(r);
    });
    w.on('error', fail);
    w.on('exit', (code) => fail(new Error(`analytics fold worker exited (${code})`)));
    w.unref();
    threads[k] = w;
    return w;
  }

  function call<T extends FoldReply>(k: number, req: FoldRequest, transfer: ArrayBuffer[] = []): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const w = thread(k);
      pending.set(req.id, { thread: k, resolve: resolve as (r: FoldReply) => void, reject });
      w.ref();
      w.postMessage(req, transfer);
    });
  }

  return {
    /**
     * One round over seq (lowest of `marks`, to] in `marks.length` partitions: each thread reads a
     * share of the range, the raw rows of other partitions' events go to their threads, and each
     * thread folds its partition (skipping events at or below its watermark). Returns the events
     * folded; a partition another process moved meanwhile folds nothing.
     */
    async round(marks: number[], to: number, zone: string, profile?: FoldProfile): Promise<number> {
      const n = marks.length;
      const lo = Math.min(...marks);
      const parts = Array.from({ length: n }, (_, k) => k);
      const reads = await Promise.all(
        parts.map((k) => {
          const [a, z] = [lo + Math.floor(((to - lo) * k) / n), lo + Math.floor(((to - lo) * (k + 1)) / n)];
          return call<ReadReply>(k, {
            type: 'read',
            id: ++next,
            query: eventsQuery(`e.seq > ${a} AND e.seq <= ${z}`, zone, partOf('e.anon_id', n)),
            zone,
            part: k,
            parts: n,
            skipUpTo: marks[k],
            expected: Math.ceil(((to - lo) * 1.1) / n),
            rotation: Math.floor((k * 65536) / n),
            profile: !!profile,
          });
        }),
      );
      const settled = await Promise.allSettled(
        parts.map((p) => {
          const forwarded = reads.flatMap((r) => (r.foreign[p] ? [r.foreign[p]!] : []));
          return call<FoldDone>(
            p,
            { type: 'fold', id: ++next, forwarded, part: p, from: marks[p], to, zone, profile: !!profile },
            forwarded.map((f) => f.buffer as ArrayBuffer),
          );
        }),
      );
      for (const [k, ms] of reads.flatMap((r) => r.times)) profile?.(k, ms);
      let folded = 0;
      for (const r of settled) {
        if (r.status === 'rejected') throw r.reason;
        folded += r.value.folded;
        for (const [k, ms] of r.value.times) profile?.(k, ms);
      }
      return folded;
    },

    /** A small round of every partition in one transaction (round.ts foldTogether), on the first thread. */
    async together(to: number, zone: string, profile?: FoldProfile): Promise<FoldResult | null> {
      const r = await call<Done>(0, { type: 'together', id: ++next, to, zone, profile: !!profile });
      for (const [k, ms] of r.times) profile?.(k, ms);
      return r.result;
    },

    /** One app's rebuild (round.ts rebuildApp), on the first thread; returns the events folded. */
    async rebuild(appId: string, timezone: string, chunk: number, profile?: FoldProfile): Promise<number> {
      const r = await call<Done>(0, { type: 'rebuild', id: ++next, appId, timezone, chunk, profile: !!profile });
      for (const [k, ms] of r.times) profile?.(k, ms);
      return r.result!.folded;
    },

    async close(): Promise<void> {
      await Promise.all(threads.map((w) => w?.terminate()));
      threads.length = 0;
    },
  };
}

export type FoldWorkers = ReturnType<typeof createFoldWorkers>;
