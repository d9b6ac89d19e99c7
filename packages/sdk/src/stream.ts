import * as K from './constants.js';
import { retryAfterMs, type FetchLike } from './http.js';
import type { Storage } from './storage.js';

/** Full jitter: random in [0, min(cap, base x 2^attempt)). */
export function backoffMs(
  attempt: number,
  baseMs: number,
  random: () => number,
  capMs = K.STREAM_BACKOFF_CAP_MS,
): number {
  return Math.floor(random() * Math.min(capMs, baseMs * 2 ** attempt));
}

export interface StreamDeps {
  fetch: FetchLike;
  url: string;
  headers: Record<string, string>;
  storage: Storage;
  /** Storage key of the last `id:` seen (a cold start resumes from it). */
  key: string;
  random: () => number;
  onEvent: (event: string, data: any) => void;
  /** A stream answered 200; `resumed` when it was asked with Last-Event-ID. */
  onOpen: (resumed: boolean) => void;
  /** Streaming stopped for good (401, no streaming body): polling carries on alone. */
  onGiveUp: (why: string) => void;
  idleMs?: number;
}

type Outcome = { stop: string } | { waitMs?: number; minMs?: number };

/**
 * The config stream (server-sent events) over fetch with a streaming body, so no EventSource is
 * needed. Reconnects forever with jittered backoff, resuming with Last-Event-ID.
 */
export class ConfigStream {
  /** True while a stream is answered and read. */
  open = false;
  private gen = 0;
  private abort: (() => void) | null = null;
  private lastId: string | null | undefined;
  private base = K.STREAM_RETRY_MS;
  private wakeWait: (() => void) | null = null;

  constructor(private d: StreamDeps) {}

  get running(): boolean {
    return this.gen % 2 === 1;
  }

  start(): void {
    if (this.running) return;
    const gen = ++this.gen;
    void this.loop(gen);
  }

  stop(): void {
    if (!this.running) return;
    this.gen++;
    this.open = false;
    this.abort?.();
    this.wakeWait?.();
  }

  private async loop(gen: number): Promise<void> {
    let attempt = 0;
    while (this.gen === gen) {
      const t0 = Date.now();
      let out: Outcome;
      try {
        out = await this.once(gen);
      } catch {
        out = {};
      }
      // A stop() (and maybe a new start()) happened meanwhile: the fields belong to the new loop.
      if (this.gen !== gen) return;
      this.open = false;
      this.abort = null;
      if ('stop' in out) {
        this.gen++;
        return this.d.onGiveUp(out.stop);
      }
      if (Date.now() - t0 >= K.STREAM_STABLE_MS) attempt = 0;
      const ms = out.waitMs ?? Math.max(out.minMs ?? 0, backoffMs(attempt++, this.base, this.d.random));
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, ms);
        (t as { unref?: () => void }).unref?.();
        this.wakeWait = () => (clearTimeout(t), resolve());
      });
      this.wakeWait = null;
    }
  }

  /** One connection, read until it ends. */
  private async once(gen: number): Promise<Outcome> {
    if (this.lastId === undefined) this.lastId = await this.d.storage.getItem(this.d.key).catch(() => null);
    const ctl = new AbortController();
    this.abort = () => ctl.abort();
    // 90 s without a byte (three missed heartbeats, or a connect never answered): a dead link.
    let idle: ReturnType<typeof setTimeout> | undefined;
    const arm = () => {
      clearTimeout(idle);
      idle = setTimeout(() => ctl.abort(), this.d.idleMs ?? K.STREAM_IDLE_MS);
      (idle as { unref?: () => void }).unref?.();
    };
    arm();
    try {
      return await this.read(gen, ctl, arm);
    } finally {
      clearTimeout(idle);
      ctl.abort();
    }
  }

  /** The request and the read loop; `arm` restarts the dead-link timer. */
  private async read(gen: number, ctl: AbortController, arm: () => void): Promise<Outcome> {
    const resumed = !!this.lastId;
    const headers = {
      ...this.d.headers,
      accept: 'text/event-stream',
      ...(resumed ? { 'last-event-id': this.lastId! } : {}),
    };
    const res = await this.d.fetch(this.d.url, { method: 'GET', headers, signal: ctl.signal });
    if (res.status === 401) return { stop: 'the stream refused the key (401)' };
    if (res.status !== 200) {
      void res.text().catch(() => undefined);
      return { minMs: retryAfterMs(res.headers.get('retry-after'), Date.now()) };
    }
    const reader = res.body?.getReader?.();
    if (!reader) return { stop: 'no streaming response body on this platform' };
    if (this.gen !== gen) return {};
    this.open = true;
    this.d.onOpen(resumed);

    let waitMs: number | undefined;
    let event = '';
    let data = '';
    let buf = '';
    const dec = new TextDecoder();
    const line = (l: string) => {
      if (l === '') {
        if (data) {
          let parsed: any;
          try {
            parsed = JSON.parse(data);
          } catch {
            /* not ours to read */
          }
          if (event === 'reconnect' && parsed?.retry_ms >= 0) waitMs = parsed.retry_ms;
          if (parsed) this.d.onEvent(event, parsed);
        }
        event = data = '';
        return;
      }
      const at = l.indexOf(':');
      if (at === 0) return;
      const field = at < 0 ? l : l.slice(0, at);
      const value = at < 0 ? '' : l.slice(at + 1).replace(/^ /, '');
      if (field === 'id' && value !== this.lastId) {
        this.lastId = value;
        void this.d.storage.setItem(this.d.key, value).catch(() => undefined);
      } else if (field === 'event') event = value;
      else if (field === 'data') data += (data ? '\n' : '') + value;
      else if (field === 'retry' && /^\d+$/.test(value)) this.base = Math.max(1, Number(value));
    };
    for (;;) {
      const { done, value } = await reader.read();
      if (done || this.gen !== gen) return { waitMs };
      arm();
      buf += dec.decode(value, { stream: true });
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        line(buf.slice(0, nl).replace(/\r$/, ''));
        buf = buf.slice(nl + 1);
      }
    }
  }
}
