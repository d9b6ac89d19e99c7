import Fastify, { type FastifyRequest } from 'fastify';
import { errorBody, registerApi } from './api.js';
import { touchActivity } from './entities.js';
import { checkToken, registerOAuth } from './oauth.js';
import { createWorld, type Account, type FakeOptions } from './state.js';

export type { FakeOptions } from './state.js';

/**
 * A faithful fake of the Snap Marketing API v1 and its OAuth server, for tests and local demos.
 * OAuth lives under {url}/login/oauth2, the API under {url}/v1 (AD_NETWORK_AUTH_URL / AD_NETWORK_API_URL).
 */
export async function startFakeAdNetwork(opts: FakeOptions = {}) {
  const w = createWorld(opts);
  const app = Fastify({ logger: opts.log ? { level: 'info' } : false, bodyLimit: 40 * 1024 * 1024 });
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(String(body))));
  });
  app.addContentTypeParser('multipart/form-data', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  // Sliding one-second windows (exact logs): per access token and per app (all tokens of the client).
  const windows = new Map<string, number[]>();
  const over = (key: string, limit: number) => {
    const t = Date.now();
    const log = (windows.get(key) ?? []).filter((x) => t - x < 1000);
    windows.set(key, log);
    if (log.length >= limit) return true;
    log.push(t);
    return false;
  };

  app.addHook('onRequest', async (req, reply) => {
    if (!req.url.startsWith('/v1/')) return;
    const entry: (typeof w.requests)[number] = { method: req.method, path: req.url.split('?')[0], at: Date.now() };
    const key = req.headers['idempotency-key'];
    if (typeof key === 'string') entry.idempotencyKey = key;
    w.requests.push(entry);
    (req as unknown as { fakeEntry: typeof entry }).fakeEntry = entry;
    const tooMany = () => {
      entry.status = 429;
      if (opts.retryAfterS) reply.header('retry-after', String(opts.retryAfterS));
      return reply.status(429).send(errorBody('E1009', 'Rate limit exceeded'));
    };
    if (w.switches.force429 > 0) {
      w.switches.force429--;
      return tooMany();
    }
    const who = checkToken(w, req.headers.authorization);
    if (!who) {
      entry.status = 401;
      return opts.empty401
        ? reply.status(401).send('')
        : reply.status(401).send(errorBody('E0002', 'Unauthorized: invalid, expired or revoked access token'));
    }
    if (over(`token:${who.token}`, opts.tokenRps ?? 10) || over(`app:${who.clientId}`, opts.appRps ?? 20))
      return tooMany();
  });

  // Idempotency (test option, off by default like Snap): a write repeating its key gets the first answer.
  const idemKey = (req: FastifyRequest) => {
    const key = req.headers['idempotency-key'];
    return opts.idempotency && req.method !== 'GET' && typeof key === 'string'
      ? `${req.method} ${req.url.split('?')[0]} ${key}`
      : undefined;
  };

  app.addHook('preHandler', async (req, reply) => {
    const entry = (req as unknown as { fakeEntry?: (typeof w.requests)[number] }).fakeEntry;
    if (entry && req.body && typeof req.body === 'object' && !Buffer.isBuffer(req.body))
      entry.body = structuredClone(req.body);
    const sw = w.switches;
    if (entry && sw.failRequests > 0 && sw.failMatch.test(`${req.method} ${entry.path}`)) {
      if (sw.failSkip > 0) sw.failSkip--;
      else {
        sw.failRequests--;
        entry.status = 400;
        return reply.status(400).send(errorBody('E2001', 'Injected failure: the network refused this request'));
      }
    }
    const k = idemKey(req);
    const seen = k ? w.idempotency.get(k) : undefined;
    if (seen) return reply.status(seen.status).type('application/json').send(seen.payload);
  });

  app.addHook('onSend', async (req, reply, payload) => {
    const k = idemKey(req);
    if (k && reply.statusCode < 300 && typeof payload === 'string' && !w.idempotency.has(k))
      w.idempotency.set(k, { status: reply.statusCode, payload });
    return payload;
  });

  // Errors keep the documented ERROR envelope: unknown paths (undocumented endpoints) and unparsable bodies.
  app.setNotFoundHandler((req, reply) => {
    reply.status(404).send(errorBody('E3003', `Resource can not be found: ${req.method} ${req.url.split('?')[0]}`));
  });
  app.setErrorHandler((err: { statusCode?: number; message: string }, _req, reply) => {
    const status = err.statusCode && err.statusCode < 500 ? err.statusCode : 500;
    reply.status(status).send(errorBody(status < 500 ? 'E2001' : 'E5000', err.message));
  });

  // Failure injection: process the request, then cut the connection before the answer arrives.
  app.addHook('onSend', async (req, _reply, payload) => {
    const sw = w.switches;
    if (
      sw.dropResponses > 0 &&
      req.url.startsWith('/v1/') &&
      (!sw.dropMatch || sw.dropMatch.test(`${req.method} ${req.url}`))
    ) {
      sw.dropResponses--;
      req.raw.socket?.destroy();
    }
    return payload;
  });

  registerOAuth(app, w);
  registerApi(app, w);

  const switches = {
    /** Snap rejects the ad in review: review_status REJECTED with reasons. */
    disapproveAd(adId: string, reasons = ['Ad violates advertising policies']) {
      const e = w.entities.get(adId);
      if (!e || e.kind !== 'ad') throw new Error(`no ad ${adId}`);
      Object.assign(e.fields, { review_status: 'REJECTED', review_status_reasons: reasons });
    },
    suspendAccount(accountId: string, status = 'DISABLED') {
      const a = w.accounts.get(accountId);
      if (!a) throw new Error(`no account ${accountId}`);
      a.status = status;
    },
    /** The squad reached its daily budget: delivery status flag and flat spend for today. */
    exhaustDailyCap(adSquadId: string) {
      const e = w.entities.get(adSquadId);
      if (!e || e.kind !== 'adsquad') throw new Error(`no ad squad ${adSquadId}`);
      e.capHit = true;
    },
    force429(n: number) {
      w.switches.force429 = n;
    },
    dropResponses(n: number, match?: RegExp) {
      w.switches.dropResponses = n;
      w.switches.dropMatch = match;
    },
    /** The next n requests matching `METHOD /v1/path` (after skipping `skip` of them) answer 400 E2001. */
    failRequests(n: number, match: RegExp, skip = 0) {
      Object.assign(w.switches, { failRequests: n, failMatch: match, failSkip: skip });
    },
    /** Removes the grant (as a user would in their connected apps): refresh -> invalid_grant, tokens -> 401. */
    revokeAll() {
      for (const g of w.grants.values()) g.revoked = true;
    },
    revoke(refreshToken: string) {
      for (const g of w.grants.values()) if (g.refreshToken === refreshToken) g.revoked = true;
    },
    expireAccessTokens() {
      for (const t of w.tokens.values()) t.expiresAt = 0;
    },
    setExpiresIn(s: number) {
      opts.expiresIn = s;
    },
    setAccount(id: string, patch: Partial<Pick<Account, 'currency' | 'timezone' | 'test' | 'status' | 'name'>>) {
      const a = w.accounts.get(id);
      if (!a) throw new Error(`no account ${id}`);
      Object.assign(a, patch);
    },
    addAccount: (a: Partial<Account>) => w.addAccount(a),
    /** Re-marks today's delivery of every effectively active ad (stats only count delivering days). */
    tick() {
      for (const e of w.entities.values()) touchActivity(w, e);
    },
  };

  // The same switches over HTTP for local demos: POST /__operator/<name> with a JSON array of arguments.
  app.post('/__operator/:name', async (req, reply) => {
    const name = (req.params as { name: string }).name as keyof typeof switches;
    const fn = switches[name] as ((...a: unknown[]) => unknown) | undefined;
    if (!fn) return reply.status(404).send({ error: 'unknown switch' });
    const args = Array.isArray(req.body) ? req.body : [];
    try {
      return { ok: true, result: fn(...args) ?? null };
    } catch (err) {
      return reply.status(400).send({ error: (err as Error).message });
    }
  });
  app.get('/__operator/state', async () => ({
    accounts: [...w.accounts.values()],
    entities: [...w.entities.values()].map((e) => ({
      id: e.id,
      kind: e.kind,
      ad_account_id: e.ad_account_id,
      deleted: !!e.deleted,
      ...e.fields,
    })),
    requests: w.requests.length,
  }));

  const url = await app.listen({ port: opts.port ?? 0, host: opts.host ?? '127.0.0.1' });
  return {
    url,
    authUrl: `${url}/login/oauth2`,
    apiUrl: `${url}/v1`,
    clientId: opts.clientId ?? 'fake-client-id',
    clientSecret: opts.clientSecret ?? 'fake-client-secret',
    world: w,
    accounts: { usd: '8adc3db7-0000-4000-8000-0000000000a1', eur: '8adc3db7-0000-4000-8000-0000000000e1' },
    ...switches,
    stop: () => app.close(),
  };
}

export type FakeAdNetwork = Awaited<ReturnType<typeof startFakeAdNetwork>>;
