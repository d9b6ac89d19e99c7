import type { OutboundClient, OutboundResult } from '../../outbound/client.js';
import { signedHeaders } from '../../outbound/signer.js';
import type { ActivityStore } from '../activity/store.js';
import type { ClaimedDelivery, QueueStore } from './queue-store.js';

/** A failure streak this long disables the endpoint. */
export const DISABLE_AFTER_MS = 5 * 86_400_000;
/** Longer than the client's 10 s timeout, so a live sender never loses its lease mid-request. */
const LEASE_S = 60;
const FANOUT_BATCH = 500;
const MAX_RETRY_AFTER_S = 86_400;
/** Endpoints answering slower than this on average do not hold back the fan-out. */
const SLOW_ENDPOINT_MS = 1000;

/** Seconds from a Retry-After header (delta-seconds or HTTP date), or null. */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | null {
  if (!value) return null;
  const v = value.trim();
  if (/^\d{1,10}$/.test(v)) return Number(v);
  const at = Date.parse(v);
  return Number.isFinite(at) ? Math.max(0, Math.ceil((at - now) / 1000)) : null;
}

/** Delay before the next attempt after attempt `n` (1-based) failed; Retry-After on 429/503 can only lengthen it. */
export function retryDelayS(scheduleS: number[], n: number, res: Pick<OutboundResult, 'status' | 'headers'>): number {
  const base = scheduleS[Math.min(n - 1, scheduleS.length - 1)];
  if (res.status === 429 || res.status === 503) {
    const ra = parseRetryAfter(res.headers['retry-after']);
    if (ra !== null) return Math.max(base, Math.min(ra, MAX_RETRY_AFTER_S));
  }
  return base;
}

function describeFailure(r: OutboundResult): string {
  if (r.status === null) return r.error ?? 'no response';
  if (r.status >= 300 && r.status < 400) return `HTTP ${r.status}: redirects are not followed`;
  return `HTTP ${r.status}`;
}

export interface DeliveryWorkerDeps {
  queue: QueueStore;
  outbound: OutboundClient;
  activity: ActivityStore;
  scheduleS: number[];
  pollMs: number;
  concurrency?: number;
  onError?: (err: unknown, where: string) => void;
}

/** Collects items and writes them together: everything that arrives in the same turn of the event loop is one statement. */
function batcher<T>(write: (items: T[]) => Promise<void>, max = 500) {
  let queue: { item: T; done: (err?: unknown) => void }[] = [];
  let scheduled = false;
  const flush = async () => {
    scheduled = false;
    const batch = queue.splice(0, max);
    if (queue.length > 0) schedule();
    try {
      await write(batch.map((b) => b.item));
      for (const b of batch) b.done();
    } catch (err) {
      for (const b of batch) b.done(err);
    }
  };
  const schedule = () => {
    if (!scheduled) {
      scheduled = true;
      setImmediate(() => void flush());
    }
  };
  return (item: T) =>
    new Promise<void>((resolve, reject) => {
      queue.push({ item, done: (err) => (err ? reject(err) : resolve()) });
      schedule();
    });
}

/**
 * One polling loop per worker process: moves outbox rows into deliveries and sends due
 * deliveries with bounded concurrency. All state is in Postgres, so any number of these loops
 * can run side by side and a restart resumes where the rows say.
 */
export function createDeliveryWorker({
  queue,
  outbound,
  activity,
  scheduleS,
  pollMs,
  concurrency = 48,
  onError = () => undefined,
}: DeliveryWorkerDeps) {
  let running = false;
  let loopDone: Promise<void> = Promise.resolve();
  let wakeUp: (() => void) | null = null;
  const inFlight = new Set<Promise<void>>();
  // Refill only when a useful number of slots is free, so a busy queue is claimed in batches.
  const refillAt = Math.max(1, Math.floor(concurrency / 4));
  /** Most attempts one endpoint may have in flight in this process. */
  const perEndpoint = Math.max(1, Math.floor(concurrency / 3));
  const perEndpointChunk = Math.max(1, Math.floor(perEndpoint / 4));
  const perEndpointInFlight = new Map<string, number>();
  let capLimited = false;
  /** Deliveries this worker's fan-out created, per endpoint, not yet claimed by it. */
  const outstanding = new Map<string, number>();
  /** Moving average of each endpoint's response time. */
  const latencyMs = new Map<string, number>();
  let nextFanOut = 0;
  let lastFanOutAt = 0;
  let nextClaim = 0;
  /** The last claim filled every free slot: more rows are probably due. */
  let backlog = false;
  const recordSuccess = batcher(queue.recordSuccesses);

  let woken = false;
  const signal = () => {
    const w = wakeUp;
    wakeUp = null;
    if (w) w();
    else woken = true;
  };
  /** External nudge (a new callback, a manual retry): look for due rows now. */
  const wake = () => {
    nextClaim = 0;
    nextFanOut = 0;
    signal();
  };
  const nap = (ms: number) =>
    new Promise<void>((resolve) => {
      if (woken || ms <= 0) {
        woken = false;
        // Always yield to I/O: a loop of already-settled promises would starve the process.
        return void setImmediate(resolve);
      }
      const t = setTimeout(() => {
        wakeUp = null;
        resolve();
      }, ms);
      wakeUp = () => {
        clearTimeout(t);
        resolve();
      };
    });

  /**
   * Fan-out waits while this worker's own fanned-out deliveries to responsive endpoints are still
   * waiting to be sent: delivery rows are then created about as fast as they can be sent, and a
   * burst of ingestion does not also pay for writing rows nobody can send yet (they wait, cheaply,
   * in the outbox). A slow endpoint's backlog does not count, so it cannot hold up other endpoints.
   */
  function fanOutHeld(): boolean {
    // Safety valve: rows sent by other workers are not seen here, so a hold never outlasts 30 s.
    if (Date.now() - lastFanOutAt > 30_000) outstanding.clear();
    let waiting = 0;
    for (const [ep, n] of outstanding) if ((latencyMs.get(ep) ?? 0) < SLOW_ENDPOINT_MS) waiting += n;
    return waiting >= 2 * concurrency;
  }

  function start(d: ClaimedDelivery): void {
    const ep = d.endpoint_id;
    if (ep) {
      perEndpointInFlight.set(ep, (perEndpointInFlight.get(ep) ?? 0) + 1);
      const o = outstanding.get(ep);
      if (o !== undefined) {
        if (o <= 1) outstanding.delete(ep);
        else outstanding.set(ep, o - 1);
      }
    }
    const p: Promise<void> = attempt(d)
      .catch((err) => onError(err, 'attempt'))
      .finally(() => {
        inFlight.delete(p);
        let refill = backlog && concurrency - inFlight.size >= refillAt;
        if (ep) {
          const n = (perEndpointInFlight.get(ep) ?? 1) - 1;
          if (n <= 0) perEndpointInFlight.delete(ep);
          else perEndpointInFlight.set(ep, n);
          // A capped endpoint that has freed a chunk of its slots gets them refilled in one claim.
          if (capLimited && n === perEndpoint - perEndpointChunk) {
            nextClaim = 0;
            refill = true;
          }
        }
        // A finished send frees a slot; only worth a pass while rows are waiting.
        if (refill) signal();
      });
    inFlight.add(p);
  }

  async function attempt(d: ClaimedDelivery): Promise<void> {
    const res = await outbound.post(d.url, d.body, signedHeaders(d.secrets, d.id, d.body));
    if (d.endpoint_id) {
      const prev = latencyMs.get(d.endpoint_id);
      if (latencyMs.size > 10_000 && prev === undefined) latencyMs.clear();
      latencyMs.set(d.endpoint_id, prev === undefined ? res.durationMs : prev * 0.8 + res.durationMs * 0.2);
    }
    const ok = res.status !== null && res.status >= 200 && res.status < 300;
    if (ok) {
      await recordSuccess({ id: d.id, attempts: d.attempts, statusCode: res.status!, durationMs: res.durationMs });
      if (d.endpoint_id && d.endpoint_failing) await queue.endpointSucceeded(d.endpoint_id);
      return;
    }
    const gone = res.status === 410;
    const retryInS = gone || d.attempts >= d.max_attempts ? null : retryDelayS(scheduleS, d.attempts, res);
    const error = gone ? 'HTTP 410: endpoint is gone' : describeFailure(res);
    const recorded = await queue.recordOutcome(d, {
      succeeded: false,
      retryInS,
      statusCode: res.status,
      error,
      durationMs: res.durationMs,
    });
    if (!recorded || !d.endpoint_id) return;
    const scope = { tenantId: d.tenant_id, appId: d.app_id };
    let reason: string | null = null;
    if (gone) reason = 'the endpoint answered 410 Gone';
    else {
      const since = await queue.endpointFailed(d.endpoint_id);
      if (since && Date.now() - since.getTime() >= DISABLE_AFTER_MS) reason = 'every delivery failed for 5 days';
    }
    if (reason && (await queue.disableEndpoint(d.endpoint_id, reason))) {
      await activity.record(scope, {
        entityType: 'webhook',
        entityId: d.endpoint_id,
        action: 'disabled',
        description: `Webhook disabled: ${reason}`,
      });
    }
  }

  /** One pass; returns how long the loop may sleep. */
  async function tick(): Promise<number> {
    const now = Date.now();
    // Fan out only when the sends have caught up: while due deliveries are waiting, new events stay
    // in the outbox (already written, cheap), so a burst does not also pay for delivery rows that
    // could not be sent yet anyway. The work moves behind the burst instead of into it.
    if (now >= nextFanOut && !backlog && !fanOutHeld()) {
      const f = await queue.fanOut(FANOUT_BATCH, 1 + scheduleS.length);
      lastFanOutAt = Date.now();
      for (const [ep, n] of Object.entries(f.byEndpoint)) outstanding.set(ep, (outstanding.get(ep) ?? 0) + n);
      // A capped (slow) endpoint must not make the fan-out run flat out: poll pace then.
      nextFanOut = f.events === FANOUT_BATCH && !capLimited ? 0 : now + pollMs;
      if (f.deliveries > 0) nextClaim = 0;
    }
    const free = concurrency - inFlight.size;
    if (Date.now() >= nextClaim && (free >= refillAt || (free > 0 && inFlight.size === 0))) {
      const claimed = await queue.claimDue(free, LEASE_S, { perEndpoint, inFlight: perEndpointInFlight }, (err) =>
        onError(err, 'open signing secret'),
      );
      for (const d of claimed) start(d);
      backlog = claimed.length === free;
      // Fewer rows than slots while some endpoint sits at its cap: its own completions trigger the next claim.
      capLimited = !backlog && [...perEndpointInFlight.values()].some((n) => n >= perEndpoint);
      nextClaim = backlog ? 0 : Date.now() + pollMs;
      // Nothing more was due for anyone: whatever this worker fanned out has been taken (maybe by others).
      if (!backlog && !capLimited) outstanding.clear();
    }
    // Only work that can actually run next counts: fan-out waits while a backlog is being sent,
    // a claim waits for free slots (completions signal). Otherwise sleep a poll interval.
    const fanOutAt = backlog || fanOutHeld() ? Infinity : nextFanOut;
    const claimAt = concurrency - inFlight.size >= refillAt ? nextClaim : Infinity;
    return Math.max(0, Math.min(fanOutAt, claimAt, Date.now() + pollMs) - Date.now());
  }

  async function loop(): Promise<void> {
    while (running) {
      let sleepMs = pollMs;
      try {
        sleepMs = await tick();
      } catch (err) {
        onError(err, 'tick');
      }
      if (running) await nap(sleepMs);
    }
  }

  return {
    start() {
      if (running) return;
      running = true;
      loopDone = loop();
    },
    /** Lets a just-written delivery go out without waiting for the next poll. */
    wake,
    async stop() {
      running = false;
      signal();
      await loopDone;
      await Promise.allSettled([...inFlight]);
    },
  };
}

export type DeliveryWorker = ReturnType<typeof createDeliveryWorker>;
