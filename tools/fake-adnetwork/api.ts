import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { create, getLive, ItemError, update, view } from './entities.js';
import { decodeCursor, encodeCursor, limitInRange, type Account, type Entity, type Kind, type World } from './state.js';
import { statsFor, StatsError } from './stats.js';

const PLURAL: Record<Kind, string> = {
  campaign: 'campaigns',
  adsquad: 'adsquads',
  ad: 'ads',
  creative: 'creatives',
  media: 'media',
};

export function errorBody(code: string, debug: string) {
  return {
    request_status: 'ERROR',
    request_id: randomUUID(),
    debug_message: debug,
    display_message: "We're sorry, but the request could not be completed",
    error_code: code,
  };
}

type Q = Record<string, string | undefined>;
const params = (req: FastifyRequest) => req.params as Record<string, string>;

/** The Marketing API v1 resources under /v1 (documented paths plus the spec's aliases). */
export function registerApi(app: FastifyInstance, w: World) {
  const ok = (extra: Record<string, unknown>, status = 'SUCCESS') => ({
    request_status: status,
    request_id: randomUUID(),
    ...extra,
  });

  /** Paging: limit 50..1000, opaque cursor, absolute next_link, creation-time order. */
  function paged<T>(req: FastifyRequest, reply: FastifyReply, rows: T[], wrap: (r: T) => unknown, key: string) {
    const q = req.query as Q;
    const limit = q.limit === undefined ? 50 : Number(q.limit);
    if (!limitInRange(limit)) return reply.status(400).send(errorBody('E1007', 'limit must be between 50 and 1000'));
    const offset = decodeCursor(q.cursor);
    const page = rows.slice(offset, offset + limit);
    let next: string | undefined;
    if (offset + limit < rows.length) {
      const u = new URL(req.url, `http://${req.headers.host}`);
      u.searchParams.set('cursor', encodeCursor(offset + limit));
      u.searchParams.set('limit', String(limit));
      next = u.toString();
    }
    return ok({ paging: next ? { next_link: next } : {}, [key]: page.map(wrap) });
  }

  function list(kind: Kind, filter: (e: Entity) => boolean) {
    return async (req: FastifyRequest, reply: FastifyReply) => {
      const withDeleted = (req.query as Q).read_deleted_entities === 'true';
      const rows = [...w.entities.values()].filter((e) => e.kind === kind && (withDeleted || !e.deleted) && filter(e));
      rows.sort((a, b) => a.created_at.localeCompare(b.created_at));
      return paged(req, reply, rows, (e) => ({ sub_request_status: 'SUCCESS', [kind]: view(w, e) }), PLURAL[kind]);
    };
  }

  /** Batch create/update: each item succeeds or fails on its own (partial failure). */
  function batch(
    kind: Kind,
    op: 'create' | 'update',
    resolve: (req: FastifyRequest, item: Record<string, any>) => string,
  ) {
    return async (req: FastifyRequest, reply: FastifyReply) => {
      const items = (req.body as Record<string, unknown> | undefined)?.[PLURAL[kind]];
      if (!Array.isArray(items) || items.length === 0 || items.length > 2000) {
        return reply.status(400).send(errorBody('E2001', `Body must carry a non-empty ${PLURAL[kind]} array`));
      }
      const results = items.map((item) => {
        try {
          if (!item || typeof item !== 'object')
            throw new ItemError('Error code: E2001, message: item must be an object');
          const accountId = resolve(req, item);
          const acct = w.accounts.get(accountId);
          if (acct && acct.status !== 'ACTIVE')
            throw new ItemError('Error code: E3002, message: Ad account is not active');
          const e = op === 'create' ? create(w, kind, accountId, item) : update(w, kind, accountId, item);
          return { sub_request_status: 'SUCCESS', [kind]: view(w, e, op !== 'create') };
        } catch (err) {
          if (!(err instanceof ItemError)) throw err;
          return { sub_request_status: 'ERROR', sub_request_error_reason: err.message };
        }
      });
      const failed = results.filter((r) => r.sub_request_status !== 'SUCCESS').length;
      if (failed && results.some((r) => /RATE_LIMIT/.test(String(r.sub_request_error_reason)))) {
        return reply.status(429).send(errorBody('E1010', 'Too many ads with the same creative within one second'));
      }
      const body = ok(
        { [PLURAL[kind]]: results },
        failed === 0 ? 'SUCCESS' : failed === results.length ? 'ERROR' : 'PARTIAL',
      );
      if (failed === results.length) return reply.status(400).send(body);
      return body;
    };
  }

  function getOne(kind: Kind) {
    return async (req: FastifyRequest, reply: FastifyReply) => {
      const e = w.entities.get(params(req).id);
      if (!e || e.kind !== kind || (e.deleted && (req.query as Q).read_deleted_entities !== 'true'))
        return reply.status(404).send(errorBody('E3003', 'Resource can not be found'));
      // Older Snap examples use lowercase statuses; clients must compare case-insensitively.
      return ok({ [PLURAL[kind]]: [{ sub_request_status: 'success', [kind]: view(w, e) }] }, 'success');
    };
  }

  function remove(kind: Kind) {
    return async (req: FastifyRequest, reply: FastifyReply) => {
      const e = w.entities.get(params(req).id);
      if (!e || e.kind !== kind) return reply.status(404).send(errorBody('E3003', 'Resource can not be found'));
      if (w.accounts.get(e.ad_account_id)?.status !== 'ACTIVE')
        return reply.status(403).send(errorBody('E3002', 'Ad account is not active'));
      e.deleted = true; // repeated deletes answer SUCCESS again
      e.updated_at = new Date().toISOString();
      return ok({ [PLURAL[kind]]: [] });
    };
  }

  const acct = (req: FastifyRequest) => params(req).id;
  const logPath = (style: 'documented' | 'spec') => async (req: FastifyRequest) => {
    w.pathLog.push({ path: `${req.method} ${req.routeOptions.url}`, style });
  };

  // Ad accounts are read only through the organization (§3.1, §3.2): there is no documented GET /adaccounts/{id}.
  app.get('/v1/me/organizations', async (req) => {
    const withAccounts = (req.query as Q).with_ad_accounts === 'true';
    const embedded = (a: Account) => ({
      id: a.id,
      name: a.name,
      type: a.type,
      status: a.status,
      currency: a.currency,
      timezone: a.timezone,
    });
    const org = { ...w.organization, ...(withAccounts ? { ad_accounts: [...w.accounts.values()].map(embedded) } : {}) };
    return ok({ organizations: [{ sub_request_status: 'SUCCESS', organization: org }] });
  });
  app.get('/v1/organizations/:id/adaccounts', async (req, reply) => {
    if (params(req).id !== w.organization.id)
      return reply.status(404).send(errorBody('E3003', 'Resource can not be found'));
    const rows = [...w.accounts.values()].map((a) => ({
      id: a.id,
      name: a.name,
      type: a.type,
      status: a.status,
      organization_id: a.organization_id,
      funding_source_ids: [],
      currency: a.currency,
      timezone: a.timezone,
      advertiser: 'Hooli',
      billing_type: 'REVOLVING',
      ...(a.test ? { test: true } : {}),
    }));
    return paged(req, reply, rows, (a) => ({ sub_request_status: 'SUCCESS', adaccount: a }), 'adaccounts');
  });

  // Campaigns
  app.post('/v1/adaccounts/:id/campaigns', batch('campaign', 'create', acct));
  app.put('/v1/adaccounts/:id/campaigns', batch('campaign', 'update', acct));
  app.get('/v1/adaccounts/:id/campaigns', (req, reply) =>
    list('campaign', (e) => e.ad_account_id === acct(req))(req, reply),
  );
  app.get('/v1/campaigns/:id', getOne('campaign'));
  app.delete('/v1/campaigns/:id', remove('campaign'));

  // Ad squads: documented writes under the campaign; the spec's /adaccounts alias behind a flag.
  const squadAcct = (req: FastifyRequest, item: Record<string, any>) => {
    const c = getLive(w, 'campaign', params(req).cid);
    if (item.campaign_id !== undefined && item.campaign_id !== c.id)
      throw new ItemError('Error code: E3004, message: campaign_id does not match the path');
    item.campaign_id = c.id;
    return c.ad_account_id;
  };
  app.post('/v1/campaigns/:cid/adsquads', { onRequest: logPath('documented') }, batch('adsquad', 'create', squadAcct));
  app.put('/v1/campaigns/:cid/adsquads', { onRequest: logPath('documented') }, batch('adsquad', 'update', squadAcct));
  app.get('/v1/campaigns/:cid/adsquads', (req, reply) =>
    list('adsquad', (e) => e.fields.campaign_id === params(req).cid)(req, reply),
  );
  app.get('/v1/adaccounts/:id/adsquads', (req, reply) =>
    list('adsquad', (e) => e.ad_account_id === acct(req))(req, reply),
  );
  app.get('/v1/adsquads/:id', getOne('adsquad'));
  app.delete('/v1/adsquads/:id', remove('adsquad'));

  // Ads
  const adAcct = (req: FastifyRequest, item: Record<string, any>) => {
    const s = getLive(w, 'adsquad', params(req).sid);
    if (item.ad_squad_id !== undefined && item.ad_squad_id !== s.id)
      throw new ItemError('Error code: E3004, message: ad_squad_id does not match the path');
    item.ad_squad_id = s.id;
    return s.ad_account_id;
  };
  app.post('/v1/adsquads/:sid/ads', { onRequest: logPath('documented') }, batch('ad', 'create', adAcct));
  app.put('/v1/adsquads/:sid/ads', { onRequest: logPath('documented') }, batch('ad', 'update', adAcct));
  app.get('/v1/adsquads/:sid/ads', (req, reply) =>
    list('ad', (e) => e.fields.ad_squad_id === params(req).sid)(req, reply),
  );
  app.get('/v1/adaccounts/:id/ads', (req, reply) => list('ad', (e) => e.ad_account_id === acct(req))(req, reply));
  app.get('/v1/ads/:id', getOne('ad'));

  if (w.opts.specPaths) {
    app.post('/v1/adaccounts/:id/adsquads', { onRequest: logPath('spec') }, batch('adsquad', 'create', acct));
    app.put('/v1/adaccounts/:id/adsquads', { onRequest: logPath('spec') }, batch('adsquad', 'update', acct));
    app.post('/v1/adaccounts/:id/ads', { onRequest: logPath('spec') }, batch('ad', 'create', acct));
    app.put('/v1/adaccounts/:id/ads', { onRequest: logPath('spec') }, batch('ad', 'update', acct));
  }

  // Media (two steps) and creatives
  app.post('/v1/adaccounts/:id/media', batch('media', 'create', acct));
  app.get('/v1/adaccounts/:id/media', (req, reply) => list('media', (e) => e.ad_account_id === acct(req))(req, reply));
  app.get('/v1/media/:id', getOne('media'));
  app.post('/v1/media/:id/upload', async (req, reply) => {
    const e = w.entities.get(params(req).id);
    if (!e || e.kind !== 'media') return reply.status(404).send(errorBody('E3003', 'Resource can not be found'));
    const raw = req.body;
    if (!Buffer.isBuffer(raw))
      return reply.status(400).send(errorBody('E2001', 'Send multipart/form-data with a part named file'));
    const head = raw.subarray(0, 4096).toString('latin1');
    const m = /name="file"; filename="([^"]*)"/.exec(head);
    if (!m) return reply.status(400).send(errorBody('E2001', 'multipart part "file" with a filename is required'));
    const max = e.fields.type === 'IMAGE' ? 5 * 1024 * 1024 : 32 * 1024 * 1024;
    if (raw.length > max + 4096)
      return reply.status(400).send(errorBody('E2008', `File exceeds ${max} bytes; use multipart-upload-v2`));
    Object.assign(e.fields, {
      media_status: 'READY',
      file_name: m[1],
      download_link: `http://${req.headers.host}/files/${e.id}`,
    });
    return ok({
      result: {
        id: e.id,
        name: e.fields.name,
        type: e.fields.type,
        media_status: 'READY',
        file_name: m[1],
        download_link: e.fields.download_link,
      },
    });
  });
  app.post('/v1/adaccounts/:id/creatives', batch('creative', 'create', acct));
  app.put('/v1/adaccounts/:id/creatives', batch('creative', 'update', acct));
  app.get('/v1/adaccounts/:id/creatives', (req, reply) =>
    list('creative', (e) => e.ad_account_id === acct(req))(req, reply),
  );
  app.get('/v1/creatives/:id', getOne('creative'));

  // Stats
  for (const kind of ['campaigns', 'adsquads', 'ads', 'adaccounts'] as const) {
    app.get(`/v1/${kind}/:id/stats`, async (req, reply) => {
      const id = params(req).id;
      const target =
        kind === 'adaccounts'
          ? w.accounts.has(id)
            ? { kind: 'adaccount' as const, id }
            : undefined
          : w.entities.get(id);
      if (!target || (target.kind !== 'adaccount' && `${target.kind}s` !== kind))
        return reply.status(404).send(errorBody('E3003', 'Resource can not be found'));
      try {
        const link = (cursor: string) => {
          const u = new URL(req.url, `http://${req.headers.host}`);
          u.searchParams.set('cursor', cursor);
          return u.toString();
        };
        return ok(statsFor(w, target, req.query as Q, link));
      } catch (err) {
        if (err instanceof StatsError) return reply.status(400).send(errorBody(err.code, err.message));
        throw err;
      }
    });
  }
}
