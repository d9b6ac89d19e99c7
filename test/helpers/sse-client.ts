import http from 'node:http';

/**
 * A tiny reference client for the config stream (text/event-stream), parsed as the HTML spec's
 * EventSource does: `id:` sets the resume id even on a message without data (the heartbeat's),
 * comments are counted, `retry:` is kept. The SDK does the same plus reconnecting.
 */
export interface SseEvent {
  /** The client's resume id once this event arrived (what Last-Event-ID would send). */
  id: string;
  event: string;
  data: any;
}

export interface SseStream {
  status: number;
  headers: Headers;
  events: SseEvent[];
  comments: number;
  retry: number | undefined;
  lastEventId: string;
  /** Resolves when the server ends the stream (or the client closes it). */
  ended: Promise<void>;
  /** The first event (after those already consumed by earlier calls) matching, within the deadline. */
  next(match?: (e: SseEvent) => boolean, timeoutMs?: number): Promise<SseEvent>;
  close(): void;
}

export interface Refusal {
  status: number;
  headers: Headers;
  body: any;
}

/** GET over its own connection (no pool: closing the stream closes the socket, nothing lingers). */
function get(url: string, headers: Record<string, string>): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => http.get(url, { headers, agent: false }, resolve).on('error', reject));
}

async function text(res: http.IncomingMessage): Promise<string> {
  let body = '';
  for await (const chunk of res) body += chunk;
  return body;
}

function toHeaders(res: http.IncomingMessage): Headers {
  const h = new Headers();
  for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) h.set(k, Array.isArray(v) ? v.join(', ') : v);
  return h;
}

export async function openStream(
  baseUrl: string,
  key: string,
  opts: { lastEventId?: string; path?: string } = {},
): Promise<SseStream | Refusal> {
  const headers: Record<string, string> = { 'x-api-key': key, accept: 'text/event-stream' };
  if (opts.lastEventId !== undefined) headers['last-event-id'] = opts.lastEventId;
  const res = await get(baseUrl + (opts.path ?? '/api/v1/sdk/config-stream'), headers);
  if (res.statusCode !== 200)
    return { status: res.statusCode!, headers: toHeaders(res), body: JSON.parse(await text(res)) };

  const s = {
    status: res.statusCode!,
    headers: toHeaders(res),
    events: [] as SseEvent[],
    comments: 0,
    retry: undefined as number | undefined,
    lastEventId: opts.lastEventId ?? '',
  };
  let wake: () => void = () => undefined;
  let done = false;
  let cursor = 0;

  // One message's fields until its blank line.
  let event = '';
  let data: string[] = [];
  function line(l: string): void {
    if (l === '') {
      if (data.length > 0)
        s.events.push({ id: s.lastEventId, event: event || 'message', data: JSON.parse(data.join('\n')) });
      event = '';
      data = [];
      return wake();
    }
    if (l.startsWith(':')) return void s.comments++;
    const at = l.indexOf(':');
    const field = at < 0 ? l : l.slice(0, at);
    const value = at < 0 ? '' : l.slice(at + 1).replace(/^ /, '');
    if (field === 'id') s.lastEventId = value;
    else if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
    else if (field === 'retry' && /^\d+$/.test(value)) s.retry = Number(value);
  }

  const ended = (async () => {
    const decoder = new TextDecoder();
    let buf = '';
    try {
      for await (const chunk of res as AsyncIterable<Buffer>) {
        buf += decoder.decode(chunk, { stream: true });
        let nl: number;
        while ((nl = buf.indexOf('\n')) >= 0) {
          line(buf.slice(0, nl).replace(/\r$/, ''));
          buf = buf.slice(nl + 1);
        }
      }
    } catch {
      /* aborted or reset: the stream is over either way */
    }
    done = true;
    wake();
  })();

  return Object.assign(s, {
    ended,
    close: () => res.destroy(),
    async next(match: (e: SseEvent) => boolean = () => true, timeoutMs = 10_000): Promise<SseEvent> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        while (cursor < s.events.length) {
          const e = s.events[cursor++]!;
          if (match(e)) return e;
        }
        if (done) throw new Error(`stream ended before the expected event; got ${JSON.stringify(s.events)}`);
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`no matching event within ${timeoutMs} ms; got ${JSON.stringify(s.events)}`);
        await new Promise<void>((r) => {
          const t = setTimeout(r, left);
          wake = () => (clearTimeout(t), r());
        });
      }
    },
  });
}

export const isStream = (r: SseStream | Refusal): r is SseStream => 'events' in r;
