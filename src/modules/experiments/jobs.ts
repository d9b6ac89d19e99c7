import type { JobQueue } from '../../jobs/queue.js';
import { coverageNeeded } from './assignment.js';
import type { DeviceExposure, ExperimentFoldStore, ExposureRow } from './fold-store.js';

/** Where it is safe to fold to: the analytics fold's horizon (every row up to it committed). */
export interface SeqHorizon {
  seqHorizon(): Promise<{ last: number; writers: { pid: number; xact_start: string }[] }>;
  stillOpen(writers: { pid: number; xact_start: string }[]): Promise<number>;
}

/** One chunk's exposures as per-device state: first exposure, variants seen, coverage needed. */
export function mergeExposures(rows: ExposureRow[]): DeviceExposure[] {
  const byDevice = new Map<string, DeviceExposure>();
  for (const r of rows) {
    const id = `${r.experiment_id}|${r.environment}|${r.anon_id}`;
    const need = coverageNeeded(r, r.unit, r.variant);
    const ts = r.ts.toISOString();
    const cur = byDevice.get(id);
    if (!cur) {
      byDevice.set(id, {
        experiment_id: r.experiment_id,
        tenant_id: r.tenant_id,
        app_id: r.app_id,
        environment: r.environment,
        anon_id: r.anon_id,
        t0: ts,
        variant: r.variant,
        multi: false,
        coverage_needed: need,
      });
      continue;
    }
    if (ts < cur.t0) cur.t0 = ts;
    if (r.variant !== cur.variant) cur.multi = true;
    cur.coverage_needed = Math.max(cur.coverage_needed, need);
  }
  return [...byDevice.values()];
}

export interface FoldResult {
  folded: number;
  watermark: number;
}

/**
 * The experiment fold: events since its own watermark, in seq chunks, up to the horizon below
 * which every row is committed (events.seq is taken before commit, so rows can appear out of seq
 * order; the analytics fold's horizon waits for open inserters, see analytics/jobs.ts).
 */
export function createExperimentFold({
  store,
  horizon,
  chunkSize,
  writerWaitMs = 5_000,
}: {
  store: ExperimentFoldStore;
  horizon: SeqHorizon;
  chunkSize: number;
  writerWaitMs?: number;
}) {
  let running: Promise<FoldResult> | null = null;

  async function safeUpper(): Promise<number | null> {
    const deadline = Date.now() + writerWaitMs;
    const h = await horizon.seqHorizon();
    let open = h.writers.length;
    while (open > 0) {
      if (Date.now() > deadline) return null;
      await new Promise((r) => setTimeout(r, 10));
      open = await horizon.stillOpen(h.writers);
    }
    return h.last;
  }

  async function runOnce(): Promise<FoldResult> {
    let watermark = await store.watermark();
    const upper = await safeUpper();
    let folded = 0;
    if (upper === null) return { folded, watermark };
    while (watermark < upper) {
      const to = Math.min(upper, watermark + chunkSize);
      const r = await store.foldRange(watermark, to, mergeExposures);
      folded += r.exposures + r.metricEvents;
      watermark = await store.watermark();
    }
    return { folded, watermark };
  }

  return {
    /** One fold; concurrent callers in this process share the run in flight. */
    run(): Promise<FoldResult> {
      running ??= runOnce().finally(() => {
        running = null;
      });
      return running;
    },
  };
}

export type ExperimentFold = ReturnType<typeof createExperimentFold>;

export const FOLD_JOB = 'experiments.fold';

/** The job handler: fold, then queue the next run `intervalS` later (the stately queue dedupes). */
export function experimentFoldJob({
  fold,
  jobs,
  intervalS,
}: {
  fold: ExperimentFold;
  jobs: JobQueue;
  intervalS: number;
}) {
  return async (): Promise<void> => {
    try {
      await fold.run();
    } finally {
      await jobs.send(FOLD_JOB, {}, { startAfter: intervalS }).catch(() => null);
    }
  };
}

/** Starts the chain once the queue exists; the minute cron revives it if it breaks. */
export function kickExperimentFold(jobs: JobQueue): () => void {
  let stopped = false;
  void jobs.whenStarted().then(async () => {
    while (!stopped) {
      if (
        await jobs.send(FOLD_JOB, {}, {}).then(
          () => true,
          () => false,
        )
      )
        return;
      await new Promise((r) => setTimeout(r, 500).unref());
    }
  });
  return () => {
    stopped = true;
  };
}
