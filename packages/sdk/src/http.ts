export type FetchLike = (
  url: string,
  init: { method: string; headers: Record<string, string>; body?: string; signal?: AbortSignal },
) => Promise<{
  status: number;
  headers: { get(name: string): string | null };
  text(): Promise<string>;
  /** A streaming body (the config stream); without it the SDK polls. */
  body?: { getReader?(): { read(): Promise<{ done: boolean; value?: Uint8Array }> } } | null;
}>;

export interface HttpAnswer {
  status: number;
  header(name: string): string | null;
  body: any;
}

/** Thrown for network failures and timeouts: the server is at fault, not the request. */
export class NetworkError extends Error {}

/** One JSON request with a hard deadline (a fetch that ignores the abort still loses the race). */
export async function request(
  fetchFn: FetchLike,
  url: string,
  opts: { method?: string; headers: Record<string, string>; body?: unknown; timeoutMs: number },
): Promise<HttpAnswer> {
  const ctl = typeof AbortController === 'function' ? new AbortController() : undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      ctl?.abort();
      reject(new NetworkError(`timed out after ${opts.timeoutMs} ms`));
    }, opts.timeoutMs);
  });
  const call = async (): Promise<HttpAnswer> => {
    const headers = { ...opts.headers, ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}) };
    const body =
      opts.body === undefined ? undefined : typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
    let res;
    let text: string;
    try {
      res = await fetchFn(url, { method: opts.method ?? 'GET', headers, body, signal: ctl?.signal });
      text = await res.text();
    } catch (e) {
      throw new NetworkError(e instanceof Error ? e.message : String(e));
    }
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: res.status, header: (n) => res.headers.get(n), body: parsed };
  };
  try {
    return await Promise.race([call(), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** Retry-After in milliseconds (delta-seconds or an HTTP date), or undefined. */
export function retryAfterMs(value: string | null, now: number): number | undefined {
  if (!value) return undefined;
  const s = Number(value);
  if (value.trim() !== '' && isFinite(s)) return Math.max(0, s * 1000);
  const t = Date.parse(value);
  return isNaN(t) ? undefined : Math.max(0, t - now);
}
