import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** What the proxy does with one request; undefined forwards it untouched. */
export type Fault =
  | { kind: 'reset' } // connection closed without an answer: the server is down
  | { kind: 'respond'; status: number; headers?: Record<string, string>; body?: unknown } // answered by the proxy
  | { kind: 'drop-after-commit' } // forwarded (the server commits), then the connection is cut before the answer
  | { kind: 'hang' } // never answered (the server is not asked)
  | { kind: 'hang-after-commit' }; // forwarded, then never answered

export interface Seen {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: any;
  fault?: Fault['kind'];
  status?: number;
  at: number;
}

const HOP = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'content-encoding', 'keep-alive']);

/**
 * A small HTTP proxy for the SDK's end-to-end tests: it forwards to the real service and injects
 * the faults a device meets (outage, 5xx, 429, lost answers, hangs) as `decide` says per request.
 */
export async function startFaultProxy(target: string) {
  const sockets = new Set<Socket>();
  const streams = new Set<Socket>();
  const seen: Seen[] = [];
  const proxy = {
    url: '',
    seen,
    decide: (_req: Seen): Fault | undefined => undefined,
    /** Requests to paths containing `part`. */
    to: (part: string) => seen.filter((s) => s.path.includes(part)),
    /** Open event streams (text/event-stream answers, relayed as they come). */
    streams,
    /** Cuts every open event stream, as a network change does. */
    dropStreams: () => streams.forEach((s) => s.destroy()),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    let body: any = text;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      /* kept as text */
    }
    const entry: Seen = { method: req.method!, path: req.url!, headers: req.headers, body, at: Date.now() };
    seen.push(entry);
    const fault = proxy.decide(entry);
    entry.fault = fault?.kind;
    if (fault?.kind === 'reset') return req.socket.destroy();
    if (fault?.kind === 'hang') return;
    if (fault?.kind === 'respond') {
      entry.status = fault.status;
      res.writeHead(fault.status, { 'content-type': 'application/json', ...fault.headers });
      return res.end(fault.body === undefined ? '' : JSON.stringify(fault.body));
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (!HOP.has(k) && typeof v === 'string') headers[k] = v;
    const ctl = new AbortController();
    res.on('close', () => ctl.abort()); // the client left: so does the relayed stream
    const answer = await fetch(target + req.url, {
      method: req.method,
      headers,
      body: text || undefined,
      signal: ctl.signal,
    });
    if (answer.status === 200 && answer.headers.get('content-type')?.startsWith('text/event-stream') && !fault) {
      entry.status = 200;
      res.writeHead(200, Object.fromEntries([...answer.headers].filter(([k]) => !HOP.has(k))));
      res.flushHeaders();
      streams.add(req.socket);
      req.socket.on('close', () => streams.delete(req.socket));
      try {
        for await (const chunk of answer.body as unknown as AsyncIterable<Uint8Array>) res.write(chunk);
      } catch {
        /* either side closed */
      }
      return res.end();
    }
    const out = Buffer.from(await answer.arrayBuffer());
    entry.status = answer.status;
    if (fault?.kind === 'drop-after-commit') return req.socket.destroy();
    if (fault?.kind === 'hang-after-commit') return;
    const back: Record<string, string> = {};
    answer.headers.forEach((v, k) => {
      if (!HOP.has(k)) back[k] = v;
    });
    res.writeHead(answer.status, back);
    res.end(out);
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return proxy;
}

export type FaultProxy = Awaited<ReturnType<typeof startFaultProxy>>;
