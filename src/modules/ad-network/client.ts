import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, FormData, request } from 'undici';
import { AppError } from '../../http/errors.js';
import type { AdNetworkLimiter, LimitKey } from './limiter.js';

/** A failure talking to the network that the caller must interpret (refresh, reconcile, or report). */
export class NetworkError extends Error {
  constructor(
    readonly kind: 'unauthorized' | 'transport' | 'server' | 'rejected',
    message: string,
    readonly status = 0,
    readonly body: unknown = undefined,
  ) {
    super(message);
  }
}

export interface Call {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** Relative to the API base (e.g. /adaccounts/x/campaigns), or an absolute next_link. */
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  form?: FormData;
  idempotencyKey?: string;
}

export interface ClientOptions {
  apiUrl: string;
  limiter: AdNetworkLimiter;
  timeoutMs?: number;
  /** 429 retries: exponential from baseMs with full jitter, capped at maxDelayMs. */
  maxRetries?: number;
  baseDelayMs?: number;
  maxDelayMs?: number;
}

export const okStatus = (s: unknown) => typeof s === 'string' && s.toUpperCase() === 'SUCCESS';

/** Reason of the first failed item of an envelope, or of the request itself. */
export function failureReason(body: any): string {
  if (!body || typeof body !== 'object') return 'empty response';
  for (const v of Object.values(body)) {
    if (Array.isArray(v)) {
      const bad = v.find(
        (x) => x && typeof x === 'object' && 'sub_request_status' in x && !okStatus(x.sub_request_status),
      );
      if (bad) return String(bad.sub_request_error_reason ?? 'item failed');
    }
  }
  return String(body.debug_message ?? body.display_message ?? body.error_code ?? 'request failed');
}

/** HTTP client for the Marketing API: limiter before every attempt, backoff on 429, envelope checks. */
export function createNetworkClient(o: ClientOptions) {
  const agent = new Agent({
    connectTimeout: 5000,
    headersTimeout: o.timeoutMs ?? 10_000,
    bodyTimeout: o.timeoutMs ?? 10_000,
    keepAliveTimeout: 4000,
  });
  const base = o.apiUrl.replace(/\/$/, '');
  const maxRetries = o.maxRetries ?? 5;
  const baseDelay = o.baseDelayMs ?? 200;
  const maxDelay = o.maxDelayMs ?? 5000;
  /** Counts calls actually put on the wire (tests and logs). */
  const stats = { sent: 0, retried429: 0 };

  async function gate(keys: LimitKey[]) {
    const deadline = Date.now() + 3000;
    for (;;) {
      let d;
      try {
        d = await o.limiter.take(keys);
      } catch {
        // Fail closed: without a working limiter we cannot prove we stay within quota.
        throw new AppError(
          'rate_limited',
          'Ad-network quota check unavailable; the call was not sent. Try again shortly.',
          undefined,
          { 'retry-after': '5' },
        );
      }
      if (d.allowed) return;
      if (Date.now() + d.retryAfterMs > deadline) {
        throw new AppError(
          'rate_limited',
          'Ad-network quota for this account is exhausted; try again shortly.',
          undefined,
          { 'retry-after': String(Math.ceil(d.retryAfterMs / 1000) || 1) },
        );
      }
      await sleep(d.retryAfterMs);
    }
  }

  async function once(
    token: string,
    c: Call,
  ): Promise<{ status: number; body: any; headers: Record<string, unknown> }> {
    const url = new URL(c.path.startsWith('http') ? c.path : base + c.path);
    if (c.path.startsWith('http') && !url.href.startsWith(new URL(base).origin))
      throw new NetworkError('rejected', 'next_link points outside the API');
    for (const [k, v] of Object.entries(c.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: 'application/json' };
    if (c.idempotencyKey) headers['idempotency-key'] = c.idempotencyKey;
    let body: string | FormData | undefined;
    if (c.form) body = c.form;
    else if (c.body !== undefined) {
      body = JSON.stringify(c.body);
      headers['content-type'] = 'application/json';
    }
    stats.sent++;
    try {
      const res = await request(url, { method: c.method, headers, body, dispatcher: agent });
      const text = await res.body.text();
      let parsed: any;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        parsed = undefined; // some error answers have an empty or non-JSON body
      }
      return { status: res.statusCode, body: parsed, headers: res.headers };
    } catch (err) {
      throw new NetworkError('transport', `ad network unreachable: ${(err as Error).message}`);
    }
  }

  return {
    stats,
    /** One logical call; retries 429s (and transport errors for GETs). Throws NetworkError or AppError. */
    async call(token: string, keys: LimitKey[], c: Call): Promise<any> {
      for (let attempt = 0; ; attempt++) {
        await gate(keys);
        let res;
        try {
          res = await once(token, c);
        } catch (err) {
          if (err instanceof NetworkError && err.kind === 'transport' && c.method === 'GET' && attempt < 2) {
            await sleep(baseDelay * 2 ** attempt);
            continue;
          }
          throw err;
        }
        if (res.status === 429) {
          if (attempt >= maxRetries) {
            throw new AppError(
              'rate_limited',
              'The ad network rejected the call for quota (429) after retries; try again later.',
              undefined,
              { 'retry-after': '10' },
            );
          }
          stats.retried429++;
          const ra = Number(res.headers['retry-after']);
          const exp = Math.min(maxDelay, baseDelay * 2 ** attempt);
          const delay = Number.isFinite(ra) && ra > 0 ? ra * 1000 : exp / 2 + Math.random() * (exp / 2);
          await sleep(delay);
          continue;
        }
        if (res.status === 401) throw new NetworkError('unauthorized', 'access token rejected', 401, res.body);
        if (res.status >= 500) {
          if (c.method === 'GET' && attempt < 2) {
            await sleep(baseDelay * 2 ** attempt);
            continue;
          }
          throw new NetworkError('server', `ad network error ${res.status}`, res.status, res.body);
        }
        if (
          res.status >= 400 ||
          !res.body ||
          (!okStatus(res.body.request_status) && res.body.request_status !== 'PARTIAL')
        ) {
          throw new NetworkError('rejected', failureReason(res.body), res.status, res.body);
        }
        return res.body;
      }
    },
    close: () => agent.close(),
  };
}

export type NetworkClient = ReturnType<typeof createNetworkClient>;

/** Maps a definitive network rejection to our error space (never a 5xx for what the client sent). */
export function toAppError(err: unknown): unknown {
  if (!(err instanceof NetworkError)) return err;
  if (err.kind === 'rejected') {
    if (err.status === 404 || /E3004|E3003/.test(err.message))
      return new AppError('not_found', `Ad network: ${err.message}`);
    if (err.status === 403 || /E3002/.test(err.message))
      return new AppError('forbidden', `Ad network refused: ${err.message}`);
    return new AppError('validation_failed', `Ad network rejected the request: ${err.message}`, [
      { path: '', message: err.message },
    ]);
  }
  return new AppError('upstream_error', `Ad network unavailable: ${err.message}`);
}
