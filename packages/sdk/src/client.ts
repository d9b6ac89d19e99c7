import { ConfigStore, type Bundle } from './config.js';
import * as K from './constants.js';
import { NetworkError, request, retryAfterMs, type FetchLike, type HttpAnswer } from './http.js';
import { bucketOf } from './murmur.js';
import { EventQueue } from './queue.js';
import { matchesRules } from './rules.js';
import type { Storage } from './storage.js';
import { ConfigStream } from './stream.js';
import { uuid } from './uuid.js';

export interface DeviceInfo {
  platform: 'ios' | 'android';
  os: string;
  appVersion: string;
  locale: string;
  country: string;
  framework?: 'native' | 'flutter' | 'react_native';
  frameworkVersion?: string;
}

export interface SdkError {
  /** queue_overflow | events_rejected | event_dropped | identify_rejected | delivery_failed | config_failed | storage_failed */
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
  fetch?: FetchLike;
  onError?: (e: SdkError) => void;
  /** Keys in storage start with this (several clients may share one storage). */
  storagePrefix?: string;
  /** Default analytics consent until `setConsent` is called. */
  consent?: { analytics: boolean };
  /** Subscribe to the config stream while in the foreground (default true); false: polling only. */
  stream?: boolean;
  /** Tests only: shorter waits. Production uses the contract's values. */
  timing?: {
    retryDelaysMs?: number[];
    lockRecheckMs?: number;
    requestTimeoutMs?: number;
    random?: () => number;
    streamIdleMs?: number;
  };
}

interface Bootstrap {
  orgId: string;
  appId: string;
  storePath: string;
  settings?: { flushInterval?: number; batchSize?: number; configTTL?: number };
  runtime_lock?: { reason: string; locked_at: string; message: string };
}
interface Identify {
  anon_id: string;
  user_id: string;
  ts_ms: number;
  traits?: Record<string, unknown>;
}
interface State {
  anonId: string;
  userId?: string;
  traits: Record<string, unknown>;
  consent: boolean;
  /** client_seq values below this may have been used: a restart continues from here. */
  seqCeil: number;
  session: { id: string; last: number };
  exposed: string[];
  identifies: Identify[];
}

type Step = 'done' | 'stop' | 'progress' | { split: number } | { retryAfter?: number };

const SEQ_BLOCK = 100;
const SESSION_TOUCH_MS = 60_000;
const RETRIABLE = (s: number) => s === 408 || s === 429 || s >= 500;
const REFUSED = (s: number) => s === 400 || s === 413 || s === 422;

export class Client {
  private o: ClientOptions;
  private fetchFn: FetchLike;
  private prefix: string;
  private queue!: EventQueue;
  private state!: State;
  private config: ConfigStore;
  private seq = 0;
  private touchedSaved = 0;
  private exposed = new Set<string>();
  private loaded: Promise<void>;
  private stateWrite: Promise<unknown> = Promise.resolve();
  private running: Promise<void> | null = null;
  private next: Promise<void> | null = null;
  private checking: Promise<boolean> | null = null;
  private recheck: Promise<boolean> | null = null;
  private timers: ReturnType<typeof setTimeout>[] = [];
  private wake: (() => void)[] = [];
  private closed = false;
  /** The last cycle gave up: only the timer (the next cycle) or an explicit flush() tries again. */
  private failing = false;
  private locked = false;
  private batchSize: number;
  private flushIntervalMs: number;
  private ttlMs = K.DEFAULT_CONFIG_TTL_MS;
  private storePath: string | undefined;
  private stream: ConfigStream | null = null;
  private inForeground = true;
  /** Streaming stopped for good (401, or no streaming fetch body): polling only. */
  private streamOff = false;

  constructor(options: ClientOptions) {
    this.o = options;
    this.fetchFn = options.fetch ?? ((u, i) => fetch(u, i));
    this.prefix = options.storagePrefix ?? 'msb.';
    this.batchSize = options.batchSize ?? K.DEFAULT_BATCH_SIZE;
    this.flushIntervalMs = options.flushIntervalMs ?? K.DEFAULT_FLUSH_INTERVAL_MS;
    const get = (path: string, headers: Record<string, string>, timeoutMs: number) =>
      this.call('GET', path, undefined, timeoutMs, headers);
    this.config = new ConfigStore(options.storage, `${this.prefix}config`, get, options.bundledConfig);
    this.loaded = this.load();
    this.loaded.catch((e) => this.report('storage_failed', `could not read storage: ${e}`));
  }

  // ---- start-up and config ----

  private async load(): Promise<void> {
    const s = this.o.storage;
    const [state, boot] = await Promise.all([s.getItem(`${this.prefix}state`), s.getItem(`${this.prefix}bootstrap`)]);
    this.queue = await EventQueue.load(s, this.prefix, this.o.maxQueueBytes ?? K.DEFAULT_MAX_QUEUE_BYTES);
    await this.config.load();
    const now = Date.now();
    this.state = state
      ? JSON.parse(state)
      : {
          anonId: uuid(),
          traits: {},
          consent: this.o.consent?.analytics ?? true,
          seqCeil: 0,
          session: { id: uuid(), last: now },
          exposed: [],
          identifies: [],
        };
    this.seq = this.state.seqCeil;
    this.exposed = new Set(this.state.exposed);
    if (boot) this.applyBootstrap(JSON.parse(boot));
    if (!state) await this.saveState();
  }

  /** Bootstrap and config, at most 3 s on the network; never rejects. */
  async start(): Promise<void> {
    try {
      await this.loaded;
    } catch {
      return;
    }
    await this.refresh();
    this.schedule();
    this.syncStream();
    if (this.queue.count) void this.flush();
  }

  /** The app came back to the foreground: the same config refresh as at start. */
  async foreground(): Promise<void> {
    this.inForeground = true;
    try {
      await this.loaded;
    } catch {
      return;
    }
    await this.refresh();
    this.syncStream();
    if (!this.locked && this.queue?.count) void this.flush();
  }

  private async refresh(): Promise<void> {
    // In parallel, so one round trip of waiting; the bundle is applied only if bootstrap brought no lock.
    const boot = this.bootstrap();
    const download = this.locked
      ? null
      : this.config
          .download(
            K.CONFIG_TIMEOUT_MS,
            boot.then(() => !this.locked),
          )
          .catch((e) => this.report('config_failed', `config bundle: ${e.message}`));
    let timer: ReturnType<typeof setTimeout> | undefined;
    const limit = new Promise<void>((resolve) => (timer = setTimeout(resolve, K.CONFIG_TIMEOUT_MS)));
    await Promise.race([Promise.all([boot, download]), limit]);
    clearTimeout(timer);
  }

  /** Asks bootstrap again (settings, runtime lock); resumes delivery when a lock is gone. */
  private async bootstrap(): Promise<void> {
    try {
      const r = await this.call('GET', '/api/v1/sdk/bootstrap', undefined, K.CONFIG_TIMEOUT_MS);
      if (r.status !== 200 || !r.body?.appId) return this.report('config_failed', `bootstrap answered ${r.status}`);
      await this.o.storage.setItem(`${this.prefix}bootstrap`, JSON.stringify(r.body));
      const wasLocked = this.locked;
      this.applyBootstrap(r.body);
      if (this.timers.length) {
        this.schedule();
        this.syncStream(); // the first storePath may come with this answer
      }
      if (wasLocked && !this.locked) void this.flush();
    } catch (e) {
      this.report('config_failed', `bootstrap: ${(e as Error).message}`);
    }
  }

  private applyBootstrap(b: Bootstrap): void {
    this.locked = !!b.runtime_lock;
    if (b.storePath) this.storePath = b.storePath;
    const s = b.settings ?? {};
    if (s.batchSize && s.batchSize > 0) this.batchSize = Math.min(s.batchSize, 500);
    if (s.flushInterval && s.flushInterval > 0) this.flushIntervalMs = s.flushInterval * 1000;
    if (s.configTTL && s.configTTL > 0) this.ttlMs = s.configTTL * 1000;
  }

  /** (Re)arms the flush, version-poll and bootstrap timers with the current settings. */
  private schedule(): void {
    this.timers.forEach(clearInterval);
    this.timers = [];
    if (this.closed) return;
    const every = (ms: number, fn: () => unknown) => {
      const t = setInterval(() => void fn(), ms);
      (t as { unref?: () => void }).unref?.();
      this.timers.push(t);
    };
    every(this.flushIntervalMs, () => this.queue.count && !this.running && this.flush());
    // While a config stream is open it announces changes: the poll is its fallback.
    every(this.o.pollIntervalMs ?? K.DEFAULT_POLL_INTERVAL_MS, () => !this.stream?.open && this.checkForUpdate());
    every(this.locked ? (this.o.timing?.lockRecheckMs ?? this.ttlMs) : this.ttlMs, () => this.bootstrap());
  }

  /**
   * The app went to the background (false: the config stream closes, the queue is flushed) or
   * came back (true: the same as `foreground()`).
   */
  async setForeground(active: boolean): Promise<void> {
    if (active) return this.foreground();
    this.inForeground = false;
    this.syncStream();
    await this.flush();
  }

  /** Opens the config stream while started and in the foreground, closes it otherwise. */
  private syncStream(): void {
    if (this.closed || !this.inForeground || this.streamOff || !this.storePath || this.o.stream === false)
      return this.stream?.stop();
    this.stream ??= new ConfigStream({
      fetch: this.fetchFn,
      url: this.o.baseUrl.replace(/\/$/, '') + this.storePath,
      headers: { 'x-api-key': this.o.apiKey },
      storage: this.o.storage,
      key: `${this.prefix}stream`,
      random: this.o.timing?.random ?? Math.random,
      idleMs: this.o.timing?.streamIdleMs,
      // A resumed stream replays only what changed since its id: one check covers any gap.
      onOpen: (resumed) => resumed && void this.checkForUpdate(),
      onEvent: (event, data) => {
        const v = data.bundle_version;
        const have = this.config.bundle?.bundle_version ?? -1;
        // Option-set versions are not cached by the SDK (optionSet() always asks), so only bundles count.
        if (typeof v === 'number' && (event === 'change' ? v > have : v !== have)) void this.checkForUpdate();
      },
      onGiveUp: (why) => {
        this.streamOff = true;
        this.report('config_failed', `config stream: ${why}; polling only`);
      },
    });
    this.stream.start();
  }

  /** Polls the version endpoint and downloads a newer bundle; true when the bundle changed. */
  checkForUpdate(): Promise<boolean> {
    if (this.locked) return Promise.resolve(false);
    // One check at a time; a call during one (a poll tick, a change notice) gets one more after it.
    if (this.checking) {
      this.recheck ??= this.checking.then(() => {
        this.recheck = null;
        return this.checkForUpdate();
      });
      return this.recheck;
    }
    this.checking = this.config
      .checkForUpdate(K.CONFIG_TIMEOUT_MS)
      .catch((e) => {
        this.report('config_failed', `version check: ${(e as Error).message}`);
        return false;
      })
      .finally(() => (this.checking = null));
    return this.checking;
  }

  // ---- events ----

  /** Persists the event; resolves once it is in storage. */
  async track(
    eventName: string,
    properties: Record<string, unknown> = {},
    options: { screen?: string; exposures?: { exp: string; variant: string }[] } = {},
  ): Promise<void> {
    await this.loaded;
    const now = Date.now();
    const st = this.state;
    let saveState = false;
    if (now - st.session.last > K.SESSION_TIMEOUT_MS) {
      st.session = { id: uuid(), last: now };
      saveState = true;
    }
    st.session.last = now;
    const seq = this.seq++;
    if (seq >= st.seqCeil) {
      st.seqCeil = seq + SEQ_BLOCK;
      saveState = true;
    }
    // Every track waits for a pending state write, so no event is stored with a client_seq that a
    // restart could hand out again (the raised ceiling is on disk first).
    await (saveState || now - this.touchedSaved > SESSION_TOUCH_MS ? this.saveState() : this.stateWrite);
    const d = this.o.device;
    const carried = this.queue.dropped;
    const event = {
      schema_version: K.SCHEMA_VERSION,
      event_id: uuid(),
      event_name: eventName,
      ts_ms: now,
      user: { anon_id: st.anonId, ...(st.userId ? { user_id: st.userId } : {}) },
      device: {
        platform: d.platform,
        os: d.os,
        app_version: d.appVersion,
        sdk_version: K.SDK_VERSION,
        framework: d.framework ?? 'native',
        ...(d.frameworkVersion ? { framework_version: d.frameworkVersion } : {}),
        locale: d.locale,
        country: d.country,
      },
      context: {
        session_id: st.session.id,
        client_seq: seq,
        ...(options.screen ? { screen: options.screen } : {}),
        ...(options.exposures ? { experiment_exposures: options.exposures } : {}),
      },
      properties: carried ? { ...properties, sdk_dropped_events: carried } : properties,
      privacy: { consent: { analytics: st.consent } },
    };
    const dropped = await this.queue.push(event, carried);
    if (dropped)
      this.report('queue_overflow', `queue over ${this.queue.maxBytes} bytes: dropped the ${dropped} oldest event(s)`, {
        dropped,
      });
    if (this.queue.count >= this.batchSize && !this.running && !this.locked && !this.failing) void this.flush();
  }

  async identify(userId: string, traits?: Record<string, unknown>): Promise<void> {
    await this.loaded;
    const st = this.state;
    st.userId = userId;
    if (traits) st.traits = { ...st.traits, ...traits };
    st.identifies.push({ anon_id: st.anonId, user_id: userId, ts_ms: Date.now(), ...(traits ? { traits } : {}) });
    await this.saveState();
    if (!this.running && !this.locked && !this.failing) void this.flush();
  }

  setConsent(consent: { analytics: boolean }): void {
    if (!this.state) {
      void this.loaded.then(() => this.setConsent(consent));
      return;
    }
    this.state.consent = consent.analytics;
    void this.saveState();
  }

  /** Log-out: a new anonymous id and session; the queue is kept. */
  async reset(): Promise<void> {
    await this.loaded;
    Object.assign(this.state, {
      anonId: uuid(),
      userId: undefined,
      traits: {},
      session: { id: uuid(), last: Date.now() },
    });
    await this.saveState();
  }

  /**
   * Delivers the queue. Resolves once the events queued at the call are acknowledged or this
   * cycle's retries are spent. One cycle runs at a time; a call during one waits for it and
   * then runs one more (calls made meanwhile share it).
   */
  flush(): Promise<void> {
    if (!this.running) return this.startCycle();
    if (!this.next) {
      this.next = this.running.then(() => {
        this.next = null;
        return this.startCycle();
      });
    }
    return this.next;
  }

  private startCycle(): Promise<void> {
    const run = this.cycle().catch((e) => this.report('delivery_failed', String(e)));
    this.running = run.then(() => {
      this.running = null;
    });
    return this.running;
  }

  private async cycle(): Promise<void> {
    await this.loaded;
    const mark = this.queue.lastSeq();
    const delays = this.o.timing?.retryDelaysMs ?? K.RETRY_DELAYS_MS;
    let retries = 0;
    let limit = this.batchSize;
    while (!this.closed && !this.locked) {
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
      const rnd = this.o.timing?.random ?? Math.random;
      await this.sleep(step.retryAfter ?? delays[retries] * (1 + K.RETRY_JITTER * (2 * rnd() - 1)));
      retries++;
    }
  }

  /** One request: the oldest pending identify, else the next batch (up to `limit` events). */
  private async step(limit: number, mark: number): Promise<Step> {
    const ident = this.state.identifies[0];
    const batch = ident ? [] : this.queue.peek(limit).filter((q) => q.seq <= mark);
    if (!ident && !batch.length) return 'done';
    let r: HttpAnswer;
    try {
      r = ident
        ? await this.call('POST', '/api/v1/ingest/identify', ident, this.requestTimeoutMs)
        : await this.call(
            'POST',
            '/api/v1/ingest/events',
            `{"batch":[${batch.map((q) => q.json).join(',')}]}`,
            this.requestTimeoutMs,
          );
    } catch (e) {
      if (!(e instanceof NetworkError)) throw e;
      this.report('delivery_failed', e.message);
      return {};
    }
    if (RETRIABLE(r.status)) {
      this.report('delivery_failed', `the service answered ${r.status}`, r.body);
      return { retryAfter: retryAfterMs(r.header('retry-after'), Date.now()) };
    }
    if (ident) {
      if (r.status < 300 || REFUSED(r.status)) {
        if (r.status >= 300) this.report('identify_rejected', `identify refused (${r.status})`, r.body);
        this.state.identifies.shift();
        await this.saveState();
        return 'progress';
      }
    } else if (r.status < 300) {
      const errors = (r.body?.errors ?? []) as unknown[];
      if (errors.length) this.report('events_rejected', `${errors.length} event(s) rejected by the service`, errors);
      await this.queue.remove(batch.map((q) => q.id));
      return 'progress';
    } else if (REFUSED(r.status)) {
      // A refusal of the whole batch: halve it until the event at fault travels alone, then drop it.
      if (batch.length > 1) return { split: Math.ceil(batch.length / 2) };
      this.report('event_dropped', `the service refused event ${batch[0].id} (${r.status})`, r.body);
      await this.queue.remove([batch[0].id]);
      return 'progress';
    }
    this.report('delivery_failed', `the service answered ${r.status}; delivery waits for the next cycle`, r.body);
    return 'stop';
  }

  // ---- flags, config, experiments ----

  getFlag(key: string, defaultValue: boolean): boolean {
    const f = this.config.bundle?.content.feature_flags?.[key];
    if (!f || typeof f !== 'object') return defaultValue;
    if (!f.enabled || !this.state) return false;
    const { traits } = this.state;
    const device = this.deviceAttributes();
    const lookup = (a: string): unknown =>
      a.startsWith('traits.')
        ? traits[a.slice(7)]
        : a.startsWith('device.')
          ? device[a.slice(7)]
          : a in traits
            ? traits[a]
            : device[a];
    if (!matchesRules(f.rules, lookup)) return false;
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
    const key = `${experimentId}\u0000${this.userKey()}`;
    if (this.state && !this.exposed.has(key)) {
      this.exposed.add(key);
      this.state.exposed.push(key);
      const props = { experiment_id: experimentId, variant };
      this.saveState()
        .then(() => this.track('experiment_exposure', props, { exposures: [{ exp: experimentId, variant }] }))
        .catch((e) => this.report('storage_failed', `exposure: ${e}`));
    }
    return variant;
  }

  async optionSet(setId: string, opts: { cursor?: string; q?: string } = {}): Promise<unknown> {
    const qs = ['cursor', 'q']
      .filter((k) => opts[k as 'q'])
      .map((k) => `${k}=${encodeURIComponent(opts[k as 'q']!)}`)
      .join('&');
    const r = await this.call(
      'GET',
      `/api/v1/sdk/option-sets/${encodeURIComponent(setId)}${qs ? `?${qs}` : ''}`,
      undefined,
      this.requestTimeoutMs,
    );
    if (r.status !== 200) throw new Error(`option set ${setId}: ${r.status} ${r.body?.detail ?? ''}`);
    return r.body.data;
  }

  isLocked(): boolean {
    return this.locked;
  }

  getAnonId(): string | undefined {
    return this.state?.anonId;
  }

  /** Events waiting in the queue. */
  queuedCount(): number {
    return this.queue?.count ?? 0;
  }

  /** Delivers what it can (one flush), then stops the timers. */
  async shutdown(): Promise<void> {
    if (!this.locked) await this.flush();
    this.closed = true;
    this.schedule();
    this.syncStream();
    this.wake.splice(0).forEach((w) => w());
    await this.running;
  }

  // ---- helpers ----

  private get requestTimeoutMs(): number {
    return this.o.timing?.requestTimeoutMs ?? K.REQUEST_TIMEOUT_MS;
  }

  private userKey(): string {
    return this.state?.userId ?? this.state?.anonId ?? '';
  }

  private deviceAttributes(): Record<string, unknown> {
    const d = this.o.device;
    return {
      platform: d.platform,
      os: d.os,
      app_version: d.appVersion,
      locale: d.locale,
      country: d.country,
      framework: d.framework ?? 'native',
      sdk_version: K.SDK_VERSION,
      user_id: this.state.userId,
      anon_id: this.state.anonId,
    };
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
