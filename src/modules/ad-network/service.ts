import type { Scope } from '../../types/domain.js';
import { AppError, notFound } from '../../http/errors.js';
import type { ExchangeRateService } from '../exchange-rates/service.js';
import { FormData } from 'undici';
import { NetworkError, okStatus, toAppError } from './client.js';
import { accountView, type ConnectionService } from './connection.js';
import type { AccountRow, AdNetworkStore } from './store.js';
import type { WriteJournal, WriteSpec } from './writes.js';

export type NetKind = WriteSpec['kind'];
const PLURAL: Record<NetKind, string> = {
  campaign: 'campaigns',
  adsquad: 'adsquads',
  ad: 'ads',
  creative: 'creatives',
  media: 'media',
};
/** Parent links of the documented object graph (account -> campaign -> ad squad -> ad). */
const PARENT: Partial<Record<NetKind, { kind: NetKind; field: string }>> = {
  adsquad: { kind: 'campaign', field: 'campaign_id' },
  ad: { kind: 'adsquad', field: 'ad_squad_id' },
};
const READ_ONLY = [
  'created_at',
  'updated_at',
  'delivery_status',
  'review_status',
  'review_status_reasons',
  'media_status',
  'packaging_status',
  'deleted',
  'download_link',
  'file_name',
];

export interface Budget {
  usd: number;
  currency: string;
  micro: number;
  /** USD per unit of the account currency used for the conversion (1 for USD accounts). */
  usd_per_unit: number;
  rate_day: string | null;
}

export interface Ctx {
  scope: Scope;
  acct: AccountRow;
  actor: string | null;
  key?: string;
}

/** Shared plumbing of the management operations: account look-up, reads, budget conversion, journaled writes. */
export function createNetworkOps({
  store,
  conn,
  journal,
  rates,
}: {
  store: AdNetworkStore;
  conn: ConnectionService;
  journal: WriteJournal;
  rates: ExchangeRateService;
}) {
  async function account(scope: Scope, id: string): Promise<AccountRow> {
    const c = await store.connection(scope);
    if (!c || c.status === 'disconnected')
      throw new AppError('conflict', 'The ad network is not connected for this app');
    const a = await store.account(scope, id);
    if (!a) throw notFound('Ad account');
    return a;
  }

  async function get(scope: Scope, path: string, adAccountId?: string) {
    try {
      return await conn.call(scope, { method: 'GET', path }, adAccountId);
    } catch (err) {
      throw toAppError(err);
    }
  }

  /** One object as the network answers it (no ownership check yet). */
  async function fetchObject(ctx: Ctx, kind: NetKind, id: string): Promise<any> {
    let body;
    try {
      body = await conn.call(
        ctx.scope,
        { method: 'GET', path: `/${PLURAL[kind]}/${encodeURIComponent(id)}` },
        ctx.acct.id,
      );
    } catch (err) {
      if (err instanceof NetworkError && err.kind === 'rejected' && (err.status === 404 || err.status === 400))
        throw notFound(kind);
      throw toAppError(err);
    }
    const obj = body[PLURAL[kind]]?.[0]?.[kind];
    if (!obj) throw notFound(kind);
    return obj;
  }

  /**
   * The ad account an object belongs to, along the documented graph: campaigns, creatives and media
   * carry ad_account_id; an ad squad names only its campaign_id, an ad only its ad_squad_id. Objects
   * we created are known from the write journal; others are resolved through their parents.
   */
  async function ownerOf(ctx: Ctx, kind: NetKind, obj: any): Promise<string | undefined> {
    const parent = PARENT[kind];
    if (!parent) return obj.ad_account_id;
    const known = await store.createdIn(ctx.scope, kind, String(obj.id));
    if (known) return known;
    const parentId = obj[parent.field];
    if (typeof parentId !== 'string' || !parentId) return undefined;
    return ownerOf(ctx, parent.kind, await fetchObject(ctx, parent.kind, parentId));
  }

  /** The current object: from the network, or from the journal for a dry-run id. 404 when another account's. */
  async function current(ctx: Ctx, kind: NetKind, id: string): Promise<any> {
    if (id.startsWith('dryrun-')) {
      const w = await store.dryRunObject(ctx.scope, kind, id);
      if (!w || w.ad_account_id !== ctx.acct.id) throw notFound(kind);
      return w.result;
    }
    const obj = await fetchObject(ctx, kind, id);
    let owner;
    try {
      owner = await ownerOf(ctx, kind, obj);
    } catch (err) {
      if (err instanceof AppError && err.code === 'not_found') throw notFound(kind);
      throw err;
    }
    if (owner !== ctx.acct.id) throw notFound(kind);
    return obj;
  }

  async function list(ctx: Ctx, path: string, kind: NetKind): Promise<any[]> {
    try {
      return await conn.all(ctx.scope, path, PLURAL[kind], kind, ctx.acct.id);
    } catch (err) {
      throw toAppError(err);
    }
  }

  /** USD from the dashboard -> micro-units of the account currency (exact for USD accounts). */
  async function toMicro(acct: AccountRow, usd: number): Promise<Budget> {
    const day = new Date().toISOString().slice(0, 10);
    if (acct.currency === 'USD')
      return { usd, currency: 'USD', micro: Math.round(usd * 1_000_000), usd_per_unit: 1, rate_day: null };
    const conv = await rates.fromUsd(usd, acct.currency, day);
    if (!conv)
      throw new AppError(
        'validation_failed',
        `No exchange rate is known for ${acct.currency}; a Super Admin can add one`,
        [{ path: '/body', message: `no USD rate for ${acct.currency}` }],
      );
    return {
      usd,
      currency: acct.currency,
      micro: Math.round(conv.value * 1_000_000),
      usd_per_unit: conv.rate,
      rate_day: conv.rateDay,
    };
  }

  const item = (body: any, kind: NetKind) => {
    const first = body?.[PLURAL[kind]]?.[0];
    // HTTP 200 does not mean the item succeeded: check its own status.
    if (first && !okStatus(first.sub_request_status))
      throw new NetworkError('rejected', String(first.sub_request_error_reason ?? 'item failed'), 400, body);
    if (!first?.[kind]) throw new NetworkError('server', 'the ad network answered without the object', 502, body);
    return first[kind];
  };

  /** Journaled create through POST path; reconciliation looks the object up by name among recent ones. */
  function create(
    ctx: Ctx,
    kind: NetKind,
    path: string,
    listPath: string,
    req: Record<string, any>,
    extra: Partial<WriteSpec> = {},
  ) {
    const send = async (key: string) =>
      item(
        await conn.call(
          ctx.scope,
          { method: 'POST', path, body: { [PLURAL[kind]]: [req] }, idempotencyKey: key },
          ctx.acct.id,
        ),
        kind,
      );
    const find = async (after: Date, claimed: Set<string>) => {
      const rows = (await conn.all(ctx.scope, listPath, PLURAL[kind], kind, ctx.acct.id)).filter(
        (r) => r.name === req.name && !claimed.has(r.id),
      );
      // Only campaigns document created_at; lists come in creation order, so otherwise the newest unclaimed one is ours.
      if (rows.some((r) => typeof r.created_at !== 'string')) return rows.at(-1);
      return rows
        .filter((r) => Date.parse(r.created_at) >= after.getTime())
        .sort((a, b) => a.created_at.localeCompare(b.created_at))[0];
    };
    return journal.run(
      ctx.scope,
      ctx.acct,
      { kind, op: 'create', request: req, send, find, dryRun: (id) => ({ id, ...req, dry_run: true }), ...extra },
      ctx.key,
      ctx.actor,
    );
  }

  /** Read-modify-write update through PUT path (the network replaces the listed entities by id); `known` is the object just read. */
  async function update(
    ctx: Ctx,
    kind: NetKind,
    op: WriteSpec['op'],
    path: string,
    id: string,
    patch: Record<string, unknown>,
    known?: any,
  ) {
    const cur = known ?? (await current(ctx, kind, id));
    const merged: Record<string, any> = { ...cur, ...patch, id };
    for (const k of [...READ_ONLY, 'dry_run']) delete merged[k];
    const send = async (key: string) =>
      item(
        await conn.call(
          ctx.scope,
          { method: 'PUT', path, body: { [PLURAL[kind]]: [merged] }, idempotencyKey: key },
          ctx.acct.id,
        ),
        kind,
      );
    return journal.run(
      ctx.scope,
      ctx.acct,
      { kind, op, request: { [PLURAL[kind]]: [merged] }, send, dryRun: () => ({ ...merged, dry_run: true }) },
      ctx.key,
      ctx.actor,
    );
  }

  /** Step 2 of media: the multipart upload, journaled and keyed like every write (its answer is not sub-request wrapped). */
  function upload(ctx: Ctx, id: string, file: { name: string; type: string; data: Buffer }) {
    const path = `/media/${encodeURIComponent(id)}/upload`;
    const send = async (key: string) => {
      const form = new FormData();
      form.append('file', new Blob([new Uint8Array(file.data)], { type: file.type }), file.name);
      return (
        (await conn.call(ctx.scope, { method: 'POST', path, form, idempotencyKey: key }, ctx.acct.id)).result ?? { id }
      );
    };
    const request = { media_id: id, file_name: file.name, size_bytes: file.data.length };
    return journal.run(ctx.scope, ctx.acct, { kind: 'media', op: 'upload', request, send }, ctx.key, ctx.actor);
  }

  async function remove(ctx: Ctx, kind: NetKind, id: string) {
    await current(ctx, kind, id);
    const send = async (key: string) => {
      await conn.call(
        ctx.scope,
        { method: 'DELETE', path: `/${PLURAL[kind]}/${encodeURIComponent(id)}`, idempotencyKey: key },
        ctx.acct.id,
      );
      return { id, deleted: true };
    };
    return journal.run(
      ctx.scope,
      ctx.acct,
      { kind, op: 'delete', request: { id }, send, dryRun: () => ({ id, deleted: true, dry_run: true }) },
      ctx.key,
      ctx.actor,
    );
  }

  return { account, get, current, list, toMicro, create, update, upload, remove, accountView, item };
}

export type NetworkOps = ReturnType<typeof createNetworkOps>;
