import * as K from './constants.js';
import { NetworkError, retryAfterMs, type HttpAnswer } from './http.js';
import { byteLength, type EventQueue } from './queue.js';

export interface Identify {
  anon_id: string;
  user_id: string;
  ts_ms: number;
  traits?: Record<string, unknown>;
}

/** What the delivery loop needs from the client: narrow, so it can be read (and tested) alone. */
export interface DeliveryDeps {
  loaded: Promise<void>;
  /** Resolves once every event tracked so far is in the queue. */
  settled(): Promise<unknown>;
  queue(): EventQueue;
  /** Pending identify calls, oldest first; `shiftIdentify` drops the first and persists. */
  identifies(): Identify[];
  shiftIdentify(): Promise<void>;
  post(path: string, body: unknown): Promise<HttpAnswer>;
  report(code: string, message: string, detail?: unknown): void;
  /** Closed or locked: no request goes out. */
  blocked(): boolean;
  batchSize(): number;
  /** A batch's JSON stays under this many bytes (browsers: a keepalive request's limit). */
  maxBatchBytes?: number;
  retryDelaysMs?: number[];
  random?: () => number;
}

type Step = 'done' | 'stop' | 'progress' | { split: number } | { retryAfter?: number };

const RETRIABLE = (s: number) => s === 408 || s === 429 || s >= 500;
const REFUSED = (s: number) => s === 400 || s === 413 || s === 422;

/**
 * The flush cycle: one at a time, identifies first, then batches of the events queued when the
 * cycle started; retries with backoff, splits refused batches, drops poison events.
 */
export class Delivery {
  /** The last cycle gave up: only the timer (the next cycle) or an explicit flush() tries again. */
  failing = false;
  private running: Promise<void> | null = null;
  private next: Promise<void> | null = null;
  private wake: (() => void)[] = [];

  constructor(private d: DeliveryDeps) {}

  get busy(): boolean {
    return !!this.running;
  }

  /** The in-flight cycle, if any (shutdown waits for it). */
  get current(): Promise<void> | null {
    return this.running;
  }

  /**
   * Resolves once the events queued at the call are acknowledged or this cycle's retries are spent.
   * A call during a cycle waits for it and then runs one more (calls made meanwhile share it).
   */
  flush(): Promise<void> {
    if (!this.running) return this.startCycle();
    this.next ??= this.running.then(() => {
      this.next = null;
      return this.startCycle();
    });
    return this.next;
  }

  /** Cuts retry waits short (shutdown). */
  wakeAll(): void {
    this.wake.splice(0).forEach((w) => w());
  }

  private startCycle(): Promise<void> {
    const run = this.cycle().catch((e) => this.d.report('delivery_failed', String(e)));
    this.running = run.then(() => {
      this.running = null;
    });
    return this.running;
  }

  private async cycle(): Promise<void> {
    await this.d.loaded;
    // Events whose write is under way count as queued at the call (a page closing right after track()).
    await this.d.settled();
    const mark = this.d.queue().lastSeq();
    const delays = this.d.retryDelaysMs ?? K.RETRY_DELAYS_MS;
    let retries = 0;
    let limit = this.d.batchSize();
    while (!this.d.blocked()) {
      const step = await this.step(limit, mark);
      this.failing = step === 'stop';
      if (step === 'done' || step === 'stop') return;
      if (step === 'progress') {
        retries = 0;
        continue;
      }
      if ('split' in step) {
        limit = step.split;
        continue;
      }
      if (retries >= delays.length) {
        this.failing = true;
        return;
      }
      const rnd = this.d.random ?? Math.random;
      await this.sleep(step.retryAfter ?? delays[retries] * (1 + K.RETRY_JITTER * (2 * rnd() - 1)));
      retries++;
    }
  }

  /** The next batch: up to `limit` events queued before the mark, under the byte limit (at least one). */
  private batch(limit: number, mark: number) {
    const all = this.d
      .queue()
      .peek(limit)
      .filter((q) => q.seq <= mark);
    const max = this.d.maxBatchBytes;
    if (!max) return all;
    let bytes = 12;
    const out = all.filter((q) => (bytes += byteLength(q.json) + 1) <= max);
    return out.length ? out : all.slice(0, 1);
  }

  /** One request: the oldest pending identify, else the next batch (up to `limit` events). */
  private async step(limit: number, mark: number): Promise<Step> {
    const d = this.d;
    const ident = d.identifies()[0];
    const batch = ident ? [] : this.batch(limit, mark);
    if (!ident && !batch.length) return 'done';
    let r: HttpAnswer;
    try {
      r = ident
        ? await d.post('/api/v1/ingest/identify', ident)
        : await d.post('/api/v1/ingest/events', `{"batch":[${batch.map((q) => q.json).join(',')}]}`);
    } catch (e) {
      if (!(e instanceof NetworkError)) throw e;
      d.report('delivery_failed', e.message);
      return {};
    }
    if (RETRIABLE(r.status)) {
      d.report('delivery_failed', `the service answered ${r.status}`, r.body);
      return { retryAfter: retryAfterMs(r.header('retry-after'), Date.now()) };
    }
    if (ident) {
      if (r.status < 300 || REFUSED(r.status)) {
        if (r.status >= 300) d.report('identify_rejected', `identify refused (${r.status})`, r.body);
        await d.shiftIdentify();
        return 'progress';
      }
    } else if (r.status < 300) {
      const errors = (r.body?.errors ?? []) as unknown[];
      if (errors.length) d.report('events_rejected', `${errors.length} event(s) rejected by the service`, errors);
      await d.queue().remove(batch.map((q) => q.id));
      return 'progress';
    } else if (REFUSED(r.status)) {
      // A refusal of the whole batch: halve it until the event at fault travels alone, then drop it.
      if (batch.length > 1) return { split: Math.ceil(batch.length / 2) };
      d.report('event_dropped', `the service refused event ${batch[0].id} (${r.status})`, r.body);
      await d.queue().remove([batch[0].id]);
      return 'progress';
    }
    d.report('delivery_failed', `the service answered ${r.status}; delivery waits for the next cycle`, r.body);
    return 'stop';
  }

  /** A wait that shutdown cuts short. */
  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(t);
        this.wake = this.wake.filter((w) => w !== done);
        resolve();
      };
      // Not unref'd: a Node script awaiting flush() must not exit in the middle of a retry wait.
      const t = setTimeout(done, ms);
      this.wake.push(done);
    });
  }
}
