import { purchaseEvent, pushEvent, type Purchase, type PurchaseKind } from './auto-events.js';
import { ConfigStore, type Bundle } from './config.js';
import * as K from './constants.js';
import { Delivery, type Identify } from './delivery.js';
import { deviceFields, targeting, type DeviceInfo } from './envelope.js';
import { evaluateExperiment, type ExperimentResult } from './experiments.js';
import { FlowRun, type FlowProgress, type OptionPage, type OptionQuery } from './flows.js';
import { request, type FetchLike, type HttpAnswer } from './http.js';
import { Lifecycle, type Session } from './lifecycle.js';
import { bucketOf } from './murmur.js';
import { EventQueue } from './queue.js';
import { matchesRules } from './rules.js';
import type { Storage } from './storage.js';
import { ConfigSync } from './sync.js';
import { uuid } from './uuid.js';

export type { DeviceInfo };

export interface SdkError {
  /** queue_overflow | events_rejected | event_dropped | identify_rejected | delivery_failed | config_failed | storage_failed | bundle_requires_newer_sdk */
  code: string;
  message: string;
  detail?: unknown;
}

export interface ClientOptions {
  apiKey: string;
  baseUrl: string;
  storage: Storage;
  device: DeviceInfo;
  bundledConfig?: Bundle;
  flushIntervalMs?: number;
  batchSize?: number;
  pollIntervalMs?: number;
  maxQueueBytes?: number;
  /** A batch's JSON stays under this many bytes (the browser entry: a keepalive request's limit). */
  maxBatchBytes?: number;
  fetch?: FetchLike;
  onError?: (e: SdkError) => void;
  /** Keys in storage start with this (several clients may share one storage). */
  storagePrefix?: string;
  /** Default analytics consent until `setConsent` is called. */
  consent?: { analytics: boolean };
  /** Subscribe to the config stream while in the foreground (default true); false: polling only. */
  stream?: boolean;
  /** Automatic app_open, app_close, session_start and session_end events (default true). */
  lifecycle?: boolean;
  /** Foreground time without a tracked event after which a session ends (default 30 minutes). */
  sessionTimeoutMs?: number;
  /** Tests only: shorter waits. Production uses the contract's values. */
  timing?: {
    retryDelaysMs?: number[];
    lockRecheckMs?: number;
    requestTimeoutMs?: number;
    random?: () => number;
    streamIdleMs?: number;
  };
}

interface State {
  anonId: string;
  userId?: string;
  traits: Record<string, unknown>;
  consent: boolean;
  /** client_seq values below this may have been used: a restart continues from here. */
  seqCeil: number;
  session: Session;
  exposed: string[];
  identifies: Identify[];
  /** False until the first start() of this install (app_open's first_open); kept across reset(). */
  launched?: boolean;
  /** Onboarding flow progress by flow id (a restart resumes). */
  flows?: Record<string, FlowProgress>;
}
type Props = Record<string, unknown>;
type TrackOptions = { screen?: string; exposures?: { exp: string; variant: string }[] };

const SEQ_BLOCK = 100;
const SESSION_TOUCH_MS = 60_000;

export class Client {
  private o: ClientOptions;
  private fetchFn: FetchLike;
  private prefix: string;
  private queue!: EventQueue;
  private state!: State;
  private config: ConfigStore;
  private sync: ConfigSync;
  private delivery: Delivery;
  private life: Lifecycle;
  private device: Record<string, string>;
  private seq = 0;
  private touchedSaved = 0;
  /** Dropped events already carried by an event whose write is under way. */
  private claimedDrops = 0;
  private exposed = new Set<string>();
  private listeners = new Set<() => void>();
  private loaded: Promise<void>;
  private stateWrite: Promise<unknown> = Promise.resolve();
  /** The newest event's write: once it is done, every event tracked before is queued. */
  private lastWrite: Promise<unknown> = Promise.resolve();

  constructor(options: ClientOptions) {
    const o = (this.o = options);
    const t = o.timing ?? {};
    this.fetchFn = o.fetch ?? ((u, i) => fetch(u, i));
    this.prefix = o.storagePrefix ?? 'msb.';
    this.device = deviceFields(o.device);
    const get = (path: string, headers: Record<string, string> = {}) =>
      this.call('GET', path, undefined, K.CONFIG_TIMEOUT_MS, headers);
    this.config = new ConfigStore(
      o.storage,
      `${this.prefix}config`,
      get,
      o.bundledConfig,
      (b) =>
        this.report('bundle_requires_newer_sdk', `bundle ${b.bundle_version} needs SDK ${b.sdk_min_version}`, {
          bundle_version: b.bundle_version,
          sdk_min_version: b.sdk_min_version,
          sdk_version: K.SDK_VERSION,
        }),
      () => this.changed(),
    );
    const report = this.report.bind(this);
    this.sync = new ConfigSync({
      ...o,
      ...t,
      fetch: this.fetchFn,
      prefix: this.prefix,
      config: this.config,
      get,
      report,
      flush: () => this.flush(),
      due: () => !!this.queue?.count && !this.delivery.busy,
    });
    this.delivery = new Delivery({
      ...t,
      maxBatchBytes: o.maxBatchBytes,
      loaded: (this.loaded = this.load()),
      settled: () => this.lastWrite,
      queue: () => this.queue,
      identifies: () => this.state.identifies,
      shiftIdentify: () => (this.state.identifies.shift(), this.saveState()),
      post: (path, body) => this.call('POST', path, body, t.requestTimeoutMs ?? K.REQUEST_TIMEOUT_MS),
      report,
      blocked: () => this.sync.closed || this.sync.locked,
      batchSize: () => this.sync.batchSize,
    });
    this.life = new Lifecycle({
      on: o.lifecycle !== false,
      timeoutMs: o.sessionTimeoutMs ?? K.SESSION_TIMEOUT_MS,
      session: () => this.state.session,
      setSession: (s) => {
        this.state.session = s;
        void this.saveState();
      },
      emit: (name, props, ts) => void this.record(name, props, {}, ts),
    });
    this.loaded.catch((e) => this.report('storage_failed', `could not read storage: ${e}`));
  }

  // ---- start-up and lifecycle ----

  private async load(): Promise<void> {
    const s = this.o.storage;
    const state = await s.getItem(`${this.prefix}state`);
    this.queue = await EventQueue.load(s, this.prefix, this.o.maxQueueBytes ?? K.DEFAULT_MAX_QUEUE_BYTES);
    await this.config.load();
    await this.sync.load();
    const now = Date.now();
    this.state = state
      ? JSON.parse(state)
      : {
          anonId: uuid(),
          traits: {},
          consent: this.o.consent?.analytics ?? true,
          seqCeil: 0,
          session: { id: uuid(), start: now, last: now },
          exposed: [],
          identifies: [],
          launched: false,
        };
    this.seq = this.state.seqCeil;
    this.exposed = new Set(this.state.exposed);
    if (!state) await this.saveState();
    this.changed();
  }

  /** Launch: app_open and session_start, then bootstrap and config (at most 3 s on the network); never rejects. */
  async start(): Promise<void> {
    try {
      await this.loaded;
    } catch {
      return;
    }
    this.life.launch(Date.now(), this.state.launched === false);
    this.state.launched = true;
    await this.refresh();
    this.sync.schedule();
    if (this.queue.count) void this.flush();
  }

  /** The app came back to the foreground: the same config refresh as at start. */
  async foreground(): Promise<void> {
    this.sync.foreground = true;
    try {
      await this.loaded;
    } catch {
      return;
    }
    await this.refresh();
    if (!this.sync.locked && this.queue?.count) void this.flush();
  }

  private async refresh(): Promise<void> {
    await this.sync.refresh();
    this.sync.syncStream();
  }

  /**
   * The app went to the background (false: session_end, the config stream closes, the queue is
   * flushed) or came back (true: session_start, the same as `foreground()`). A repeated value does nothing.
   */
  async setForeground(active: boolean): Promise<void> {
    if (!this.state) await this.loaded;
    if (!this.life.setForeground(active, Date.now())) return;
    if (active) return this.foreground();
    this.sync.foreground = false;
    this.sync.syncStream();
    // Urgent: the upload starts now even while a cycle runs (a closing page has one task left).
    await this.delivery.flush(true);
  }

  /** Checks the version endpoint now; downloads when `bundle_version` grew. True when the bundle changed. */
  checkForUpdate(): Promise<boolean> {
    return this.sync.checkForUpdate();
  }

  // ---- events ----

  /** Persists the event; resolves once it is in storage. Its session is the one current at the call. */
  track(eventName: string, properties: Props = {}, options: TrackOptions = {}): Promise<void> {
    if (!this.state) return this.loaded.then(() => this.track(eventName, properties, options));
    const now = Date.now();
    this.life.touch(now);
    return this.record(eventName, properties, options, now);
  }

  /** Builds the event now (session, sequence, identity), then writes it after any state write it needs. */
  private record(name: string, properties: Props, options: TrackOptions, ts: number): Promise<void> {
    const st = this.state;
    st.session.last = ts;
    const seq = this.seq++;
    let saveState = false;
    if (seq >= st.seqCeil) {
      st.seqCeil = seq + SEQ_BLOCK;
      saveState = true;
    }
    const carried = this.queue.dropped - this.claimedDrops;
    this.claimedDrops += carried;
    const event = {
      schema_version: K.SCHEMA_VERSION,
      event_id: uuid(),
      event_name: name,
      ts_ms: ts,
      user: { anon_id: st.anonId, ...(st.userId ? { user_id: st.userId } : {}) },
      device: this.device,
      context: {
        session_id: st.session.id,
        client_seq: seq,
        ...(options.screen ? { screen: options.screen } : {}),
        ...(options.exposures ? { experiment_exposures: options.exposures } : {}),
      },
      properties: carried ? { ...properties, sdk_dropped_events: carried } : properties,
      privacy: { consent: { analytics: st.consent } },
    };
    // No event is stored with a client_seq that a restart could hand out again: the raised ceiling is on disk first.
    const wait = saveState || ts - this.touchedSaved > SESSION_TOUCH_MS ? this.saveState() : this.stateWrite;
    const write = wait
      .then(() => this.queue.push(event, carried))
      .then((dropped) => {
        if (dropped)
          this.report(
            'queue_overflow',
            `queue over ${this.queue.maxBytes} bytes: dropped the ${dropped} oldest event(s)`,
            {
              dropped,
            },
          );
        const { delivery, sync } = this;
        if (this.queue.count >= sync.batchSize && !delivery.busy && !sync.locked && !delivery.failing)
          void this.flush();
      })
      .finally(() => (this.claimedDrops -= carried));
    this.lastWrite = write.catch(() => undefined);
    return write;
  }

  async identify(userId: string, traits?: Props): Promise<void> {
    await this.loaded;
    const st = this.state;
    st.userId = userId;
    if (traits) st.traits = { ...st.traits, ...traits };
    st.identifies.push({ anon_id: st.anonId, user_id: userId, ts_ms: Date.now(), ...(traits ? { traits } : {}) });
    this.changed();
    await this.saveState();
    if (!this.delivery.busy && !this.sync.locked && !this.delivery.failing) void this.flush();
  }

  setConsent(consent: { analytics: boolean }): void {
    if (!this.state) {
      void this.loaded.then(() => this.setConsent(consent));
      return;
    }
    this.state.consent = consent.analytics;
    void this.saveState();
  }

  /** Log-out: the open session ends, a new anonymous id and session start; the queue is kept. */
  async reset(): Promise<void> {
    await this.loaded;
    this.life.restart(Date.now(), () => Object.assign(this.state, { anonId: uuid(), userId: undefined, traits: {} }));
    this.changed();
    await this.saveState();
  }

  /**
   * Delivers the queue. Resolves once the events tracked before the call are acknowledged or this
   * cycle's retries are spent. One cycle runs at a time (see Delivery).
   */
  flush(): Promise<void> {
    return this.delivery.flush();
  }

  // ---- typed automatic events (the names and properties the analytics read) ----

  purchaseStarted = (p: Purchase) => this.purchase('started', p);
  purchaseCompleted = (p: Purchase) => this.purchase('completed', p);
  purchaseFailed = (p: Purchase) => this.purchase('failed', p);
  purchaseCanceled = (p: Purchase) => this.purchase('canceled', p);
  purchasePending = (p: Purchase) => this.purchase('pending', p);
  purchaseRestored = (p: Purchase) => this.purchase('restored', p);
  pushTokenRegistered = (token: string) => this.auto(() => pushEvent('push_token_registered', 'token', token));
  pushPermission = (granted: boolean) => this.track(`push_permission_${granted === true ? 'granted' : 'denied'}`);
  pushDelivered = (id: string) => this.auto(() => pushEvent('push_delivered', 'push_id', id));
  pushTapped = (id: string) => this.auto(() => pushEvent('push_tapped', 'push_id', id));

  private purchase(kind: PurchaseKind, p: Purchase): Promise<void> {
    return this.auto(() => purchaseEvent(kind, p));
  }

  /** Tracks a checked event; a failed check rejects (TypeError) and queues nothing. */
  private auto(build: () => [string, Props]): Promise<void> {
    try {
      return this.track(...build());
    } catch (e) {
      return Promise.reject(e);
    }
  }

  // ---- flags, config, experiments ----

  getFlag(key: string, defaultValue: boolean): boolean {
    const f = this.config.bundle?.content.feature_flags?.[key];
    if (!f || typeof f !== 'object') return defaultValue;
    if (!f.enabled || !this.state) return false;
    if (!matchesRules(f.rules, this.lookup())) return false;
    return this.bucket(key) < (f.rollout_pct ?? 100) * (K.BUCKETS / 100);
  }

  getRemoteConfig<T = unknown>(key: string, defaultValue: T): T {
    const rc = this.config.bundle?.content.remote_config;
    return rc && key in rc ? (rc[key] as T) : defaultValue;
  }

  getBundle(): Bundle | null {
    return this.config.bundle;
  }

  /** 0..9999 for the current user (the anon id before identify). */
  bucket(experimentId: string): number {
    return bucketOf(this.userKey(), experimentId);
  }

  /** The user's variant; the first call per (experiment, user) queues one experiment_exposure. */
  getVariant(experimentId: string, variants: string[]): string {
    const variant = variants[Math.floor((this.bucket(experimentId) * variants.length) / K.BUCKETS)];
    this.expose(experimentId, variant);
    return variant;
  }

  /**
   * A bundle experiment (decisions §10): running -> the assigned variant (the first read per
   * (experiment, unit) queues one experiment_exposure), or control's value when targeting or
   * coverage leave the unit out; stopped -> control's value; shipped -> the shipped value.
   * Unknown (or before storage is read): `{ inExperiment: false, variant: null, value: defaultValue }`.
   */
  getExperiment<T = unknown>(key: string, defaultValue?: T): ExperimentResult & { value: T } {
    const e = this.config.bundle?.content.experiments?.[key];
    if (!e || !this.state || !e.variants?.length)
      return { inExperiment: false, variant: null, value: defaultValue as T };
    const { expose, ...r } = evaluateExperiment(e, this.userKey(), this.lookup());
    if (expose) this.expose(key, r.variant!);
    return r as ExperimentResult & { value: T };
  }

  /** Queues one experiment_exposure per (experiment, unit), remembered across restarts once it is stored. */
  private expose(exp: string, variant: string): void {
    const key = `${exp}\u0000${this.userKey()}`;
    if (!this.state || this.exposed.has(key)) return;
    this.exposed.add(key);
    // The event first, then the memory of it: a kill in between repeats the exposure rather than losing it.
    this.track('experiment_exposure', { experiment_id: exp, variant }, { exposures: [{ exp, variant }] })
      .then(() => {
        this.state.exposed.push(key);
        return this.saveState();
      })
      .catch((e) => this.report('storage_failed', `exposure: ${e}`));
  }

  /** The headless runtime of a published onboarding flow; null when the bundle has none by this id (or storage is not read yet). */
  flow(flowId: string): FlowRun | null {
    const def = this.config.bundle?.content.onboarding_flows?.[flowId];
    if (!def || !Array.isArray(def.steps) || !this.state) return null;
    return new FlowRun(flowId, def, {
      track: (name, props) => this.track(name, props),
      optionSet: (setId, query) => this.optionSet(setId, query),
      progress: (id) => this.state.flows?.[id],
      save: (id, p) => {
        (this.state.flows ??= {})[id] = p;
        this.changed();
        return this.saveState();
      },
    });
  }

  async optionSet(setId: string, opts: OptionQuery = {}): Promise<OptionPage> {
    const qs = (['cursor', 'q', 'limit'] as const)
      .filter((k) => opts[k])
      .map((k) => `${k}=${encodeURIComponent(opts[k]!)}`)
      .join('&');
    const r = await this.call(
      'GET',
      `/api/v1/sdk/option-sets/${encodeURIComponent(setId)}${qs ? `?${qs}` : ''}`,
      undefined,
      this.o.timing?.requestTimeoutMs ?? K.REQUEST_TIMEOUT_MS,
    );
    if (r.status !== 200) throw new Error(`option set ${setId}: ${r.status} ${r.body?.detail ?? ''}`);
    return r.body.data;
  }

  /**
   * Calls `listener` after anything the getters answer may have changed: storage read, a new bundle
   * applied, identify, reset, flow progress. Returns the unsubscribe function.
   */
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  private changed(): void {
    for (const l of this.listeners)
      try {
        l();
      } catch {
        /* a throwing listener must not break the client */
      }
  }

  isLocked(): boolean {
    return this.sync.locked;
  }

  getAnonId(): string | undefined {
    return this.state?.anonId;
  }

  /** The current session's id (fixed on each event when it is tracked). */
  getSessionId(): string | undefined {
    return this.state?.session.id;
  }

  /** Events waiting in the queue. */
  queuedCount(): number {
    return this.queue?.count ?? 0;
  }

  /** Termination: session_end (if a session is open) and app_close, one last flush, then the timers stop. */
  async shutdown(): Promise<void> {
    if (this.state && !this.sync.closed) this.life.terminate(Date.now());
    if (!this.sync.locked) await this.flush();
    this.sync.close();
    this.delivery.wakeAll();
    await this.delivery.current;
  }

  // ---- helpers ----

  private userKey(): string {
    return this.state?.userId ?? this.state?.anonId ?? '';
  }

  private lookup(): (a: string) => unknown {
    return targeting(this.device, this.state);
  }

  private call(
    method: string,
    path: string,
    body: unknown,
    timeoutMs: number,
    headers: Record<string, string> = {},
  ): Promise<HttpAnswer> {
    return request(this.fetchFn, this.o.baseUrl.replace(/\/$/, '') + path, {
      method,
      body,
      timeoutMs,
      headers: { 'x-api-key': this.o.apiKey, ...headers },
    });
  }

  private saveState(): Promise<void> {
    this.touchedSaved = Date.now();
    const write = () => this.o.storage.setItem(`${this.prefix}state`, JSON.stringify(this.state));
    const run = this.stateWrite.then(write, write);
    this.stateWrite = run.catch(() => undefined);
    return run;
  }

  private report(code: string, message: string, detail?: unknown): void {
    try {
      this.o.onError?.({ code, message, ...(detail !== undefined ? { detail } : {}) });
    } catch {
      /* a throwing handler must not break delivery */
    }
  }
}

export function createClient(options: ClientOptions): Client {
  return new Client(options);
}
