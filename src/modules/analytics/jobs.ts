import type { JobQueue } from '../../jobs/queue.js';
import type { RollupStore } from './store.js';

export interface RunResult {
  folded: number;
  watermark: number;
  rebuilt: string[];
  /** False when an ingest transaction stayed open too long; those rows wait for the next run. */
  horizonReached: boolean;
}

/** Passes of one run at most: a catch-up still ends, so the funnel refresh after it runs. */
const MAX_PASSES = 10;

/**
 * The fold pipeline. events.seq is taken from the sequence before the inserting transaction
 * commits, so rows can become visible out of seq order. A run therefore reads the last seq
 * handed out (L) first, then the sessions holding a write lock on `events` (every inserter takes
 * it before calling nextval), waits for those transactions to end, and only then folds up to L:
 * at that point every row with seq <= L is committed or rolled back, and none can appear later.
 * It then looks once more, and with no writer open takes the new L (safeUpper).
 * A pass that leaves at least `catchUpMin` newer seqs (events that arrived while it folded, or
 * committed above L while it waited) is followed by another pass in the same run, instead of
 * waiting for the funnel refresh and the next interval. After a pass over at least `catchUpMin`
 * seqs (a catch-up), any newer seq earns another pass: otherwise the tail of a bulk insert that
 * committed while the run waited for it waited 9.5 s (measured) for the refresh and the next run.
 * Steady-state passes are smaller, and one pass per run keeps them from chasing arriving events.
 */
export function createRollupRunner({
  store,
  chunkSize,
  catchUpMin,
  writerWaitMs = 5_000,
}: {
  store: RollupStore;
  chunkSize: number;
  catchUpMin: number;
  writerWaitMs?: number;
}) {
  let running: Promise<RunResult> | null = null;
  // Set by stop(): a run ends after its current round (the watermarks keep what it folded).
  let stopped = false;
  // Events folded since the last ANALYZE of the rollups, and in total then. A process starts from the
  // stored total: counting from zero, a process started on a big database analyzed every 50,000
  // events (1.4 s each at 10M events, every 2.5 s at 20,000 events/s).
  let sinceAnalyze = 0;
  let atAnalyze: number | null = null;

  /** Waits until none of `writers` is open; false once `deadline` passes first. */
  async function ended(writers: { pid: number; xact_start: string }[], deadline: number): Promise<boolean> {
    for (let open = writers.length; open > 0; open = await store.stillOpen(writers)) {
      if (Date.now() > deadline) return false;
      await new Promise((r) => setTimeout(r, 10));
    }
    return true;
  }

  /**
   * The highest seq every row up to which is committed or rolled back, or null when a writer stays
   * open past the wait. After waiting for writers, the horizon is taken once more: the seqs they
   * took after the first one (a bulk insert's last rows) are then folded in this pass, where they
   * otherwise waited for another (measured: 16,000 seqs, 4.3 s). Under steady ingestion the second
   * look usually finds a writer again; the first horizon is kept then rather than waiting again.
   */
  async function safeUpper(): Promise<number | null> {
    const deadline = Date.now() + writerWaitMs;
    const first = await store.seqHorizon();
    if (first.writers.length === 0) return first.last;
    if (!(await ended(first.writers, deadline))) return null;
    const again = await store.seqHorizon();
    return again.writers.length === 0 ? again.last : first.last;
  }

  async function runOnce(): Promise<RunResult> {
    const rebuilt: string[] = [];
    for (const app of await store.appsNeedingRebuild()) {
      if (stopped) break;
      await store.rebuildApp(app.app_id, app.timezone, chunkSize);
      rebuilt.push(app.app_id);
      await store.analyze();
    }
    let folded = 0;
    const state = await store.state();
    atAnalyze ??= Number(state.events_folded);
    let watermark = state.watermark;
    let reached = false;
    for (let pass = 0; pass < MAX_PASSES && !stopped; pass++) {
      const upper = await safeUpper();
      if (upper === null) break;
      reached = true;
      const passFrom = Number(watermark);
      while (watermark < upper && !stopped) {
        const r = await store.foldChunk(upper, chunkSize);
        folded += r.folded;
        sinceAnalyze += r.folded;
        // Re-analyze when the tables grew by a fifth (and at least 50,000 events) since last time.
        if (sinceAnalyze >= 50_000 && sinceAnalyze >= 0.2 * atAnalyze) {
          await store.analyze();
          atAnalyze += sinceAnalyze;
          sinceAnalyze = 0;
        }
        if (r.watermark <= watermark) break;
        watermark = r.watermark;
      }
      const left = (await store.seqHorizon()).last - Number(watermark);
      if (left < Math.max(1, catchUpMin) && (left <= 0 || Number(watermark) - passFrom < catchUpMin)) break;
    }
    if (folded === 0) await store.markIdle();
    await store.convertPending();
    return { folded, watermark: Number(watermark), rebuilt, horizonReached: reached };
  }

  /** One fold; concurrent callers in this process share the run in flight. */
  function run(): Promise<RunResult> {
    running ??= runOnce().finally(() => {
      running = null;
    });
    return running;
  }

  return {
    run,
    /**
     * A fold that starts after this call, so its horizon covers every event committed before it.
     * A run in flight (the job's) may have taken its horizon earlier: its answer would miss those
     * events, so it is waited for first (its failure is its caller's), then a run is shared again.
     */
    async runAfterNow(): Promise<RunResult> {
      await running?.catch(() => undefined);
      return run();
    },
    /** The service's stop: the run in flight ends after its current round; resolves once it has. */
    async stop(): Promise<void> {
      stopped = true;
      await running?.catch(() => undefined);
    },
  };
}

export type RollupRunner = ReturnType<typeof createRollupRunner>;

/** The job handler: fold, then queue the next run ROLLUP_INTERVAL_S later (stately queue dedupes). */
export function rollupJobHandler({
  runner,
  jobs,
  intervalS,
}: {
  runner: RollupRunner;
  jobs: JobQueue;
  intervalS: number;
}) {
  return async (): Promise<void> => {
    try {
      await runner.run();
    } finally {
      await jobs.send('analytics.rollup', {}, { startAfter: intervalS }).catch(() => null);
    }
  };
}

/**
 * Starts the chain once the queue has created its queues (compose runs before the queue starts, and
 * pg-boss drops a send to a queue that does not exist yet); the minute cron revives it if it breaks.
 * Returns a stop function.
 */
export function kickRollupChain(jobs: JobQueue): () => void {
  let stopped = false;
  void jobs.whenStarted().then(async () => {
    while (!stopped) {
      const sent = await jobs.send('analytics.rollup', {}, {}).then(
        () => true,
        () => false,
      );
      if (sent) return;
      await new Promise((r) => setTimeout(r, 500).unref());
    }
  });
  return () => {
    stopped = true;
  };
}
