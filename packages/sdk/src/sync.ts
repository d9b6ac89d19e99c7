import type { ConfigStore } from './config.js';
import * as K from './constants.js';
import type { FetchLike, HttpAnswer } from './http.js';
import type { Storage } from './storage.js';
import { ConfigStream } from './stream.js';

interface Bootstrap {
  orgId: string;
  appId: string;
  storePath: string;
  settings?: { flushInterval?: number; batchSize?: number; configTTL?: number };
  runtime_lock?: { reason: string; locked_at: string; message: string };
}

export interface SyncDeps {
  fetch: FetchLike;
  baseUrl: string;
  apiKey: string;
  storage: Storage;
  prefix: string;
  config: ConfigStore;
  get(path: string): Promise<HttpAnswer>;
  report(code: string, message: string, detail?: unknown): void;
  /** Delivery resumes (a lock was lifted) or runs on the flush timer. */
  flush(): unknown;
  /** The flush timer's question: anything queued and no cycle running? */
  due(): boolean;
  batchSize?: number;
  flushIntervalMs?: number;
  pollIntervalMs?: number;
  stream?: boolean;
  lockRecheckMs?: number;
  random?: () => number;
  streamIdleMs?: number;
}

/**
 * The config capability's network side: bootstrap (settings, runtime lock), the bundle download,
 * the version poll, the config stream, and the timers that drive them and the flush.
 */
export class ConfigSync {
  locked = false;
  batchSize: number;
  private flushIntervalMs: number;
  private ttlMs = K.DEFAULT_CONFIG_TTL_MS;
  private storePath: string | undefined;
  private stream: ConfigStream | null = null;
  /** Streaming stopped for good (401, or no streaming fetch body): polling only. */
  private streamOff = false;
  private timers: ReturnType<typeof setTimeout>[] = [];
  private checking: Promise<boolean> | null = null;
  private recheck: Promise<boolean> | null = null;
  foreground = true;
  closed = false;

  constructor(private d: SyncDeps) {
    this.batchSize = d.batchSize ?? K.DEFAULT_BATCH_SIZE;
    this.flushIntervalMs = d.flushIntervalMs ?? K.DEFAULT_FLUSH_INTERVAL_MS;
  }

  /** The cached bootstrap answer (a locked app that restarts offline stays locked). */
  async load(): Promise<void> {
    const boot = await this.d.storage.getItem(`${this.d.prefix}bootstrap`);
    if (boot) this.apply(JSON.parse(boot));
  }

  /** Bootstrap and the bundle in parallel, at most CONFIG_TIMEOUT_MS of waiting. */
  async refresh(): Promise<void> {
    // The bundle is applied only if bootstrap brought no lock.
    const boot = this.bootstrap();
    const download = this.locked
      ? null
      : this.d.config
          .download(
            K.CONFIG_TIMEOUT_MS,
            boot.then(() => !this.locked),
          )
          .catch((e) => this.d.report('config_failed', `config bundle: ${e.message}`));
    let timer: ReturnType<typeof setTimeout> | undefined;
    const limit = new Promise<void>((resolve) => (timer = setTimeout(resolve, K.CONFIG_TIMEOUT_MS)));
    await Promise.race([Promise.all([boot, download]), limit]);
    clearTimeout(timer);
  }

  /** Asks bootstrap again (settings, runtime lock); resumes delivery when a lock is gone. */
  private async bootstrap(): Promise<void> {
    try {
      const r = await this.d.get('/api/v1/sdk/bootstrap');
      if (r.status !== 200 || !r.body?.appId) return this.d.report('config_failed', `bootstrap answered ${r.status}`);
      await this.d.storage.setItem(`${this.d.prefix}bootstrap`, JSON.stringify(r.body));
      const wasLocked = this.locked;
      this.apply(r.body);
      if (this.timers.length) {
        this.schedule();
        this.syncStream(); // the first storePath may come with this answer
      }
      if (wasLocked && !this.locked) void this.d.flush();
    } catch (e) {
      this.d.report('config_failed', `bootstrap: ${(e as Error).message}`);
    }
  }

  private apply(b: Bootstrap): void {
    this.locked = !!b.runtime_lock;
    if (b.storePath) this.storePath = b.storePath;
    const s = b.settings ?? {};
    if (s.batchSize && s.batchSize > 0) this.batchSize = Math.min(s.batchSize, 500);
    if (s.flushInterval && s.flushInterval > 0) this.flushIntervalMs = s.flushInterval * 1000;
    if (s.configTTL && s.configTTL > 0) this.ttlMs = s.configTTL * 1000;
  }

  /** (Re)arms the flush, version-poll and bootstrap timers with the current settings. */
  schedule(): void {
    this.timers.forEach(clearInterval);
    this.timers = [];
    if (this.closed) return;
    const every = (ms: number, fn: () => unknown) => {
      const t = setInterval(() => void fn(), ms);
      (t as { unref?: () => void }).unref?.();
      this.timers.push(t);
    };
    every(this.flushIntervalMs, () => this.d.due() && this.d.flush());
    // While a config stream is open it announces changes: the poll is its fallback.
    every(this.d.pollIntervalMs ?? K.DEFAULT_POLL_INTERVAL_MS, () => !this.stream?.open && this.checkForUpdate());
    every(this.locked ? (this.d.lockRecheckMs ?? this.ttlMs) : this.ttlMs, () => this.bootstrap());
  }

  /** Opens the config stream while started and in the foreground, closes it otherwise. */
  syncStream(): void {
    if (this.closed || !this.foreground || this.streamOff || !this.storePath || this.d.stream === false)
      return this.stream?.stop();
    this.stream ??= new ConfigStream({
      fetch: this.d.fetch,
      url: this.d.baseUrl.replace(/\/$/, '') + this.storePath,
      headers: { 'x-api-key': this.d.apiKey },
      storage: this.d.storage,
      key: `${this.d.prefix}stream`,
      random: this.d.random ?? Math.random,
      idleMs: this.d.streamIdleMs,
      // A resumed stream replays only what changed since its id: one check covers any gap.
      onOpen: (resumed) => resumed && void this.checkForUpdate(),
      onEvent: (event, data) => {
        const v = data.bundle_version;
        const have = this.d.config.bundle?.bundle_version ?? -1;
        // Option-set versions are not cached by the SDK (optionSet() always asks), so only bundles count.
        if (typeof v === 'number' && (event === 'change' ? v > have : v !== have)) void this.checkForUpdate();
      },
      onGiveUp: (why) => {
        this.streamOff = true;
        this.d.report('config_failed', `config stream: ${why}; polling only`);
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
    this.checking = this.d.config
      .checkForUpdate(K.CONFIG_TIMEOUT_MS)
      .catch((e) => {
        this.d.report('config_failed', `version check: ${(e as Error).message}`);
        return false;
      })
      .finally(() => (this.checking = null));
    return this.checking;
  }

  /** Stops the timers and the stream for good. */
  close(): void {
    this.closed = true;
    this.schedule();
    this.syncStream();
  }
}
