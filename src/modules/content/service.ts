import { roleAtLeast, type CustomerContext, type Scope } from '../../http/auth.js';
import { AppError, forbidden, notFound } from '../../http/errors.js';
import type { Tx } from '../../db/pool.js';
import type { ActivityStore } from '../activity/store.js';
import type { BundleService } from '../bundles/service.js';
import type { ContentKind, ContentStore, FlagRow, ItemRow, ItemStatus } from './store.js';
import { checkFreeForm, MAX_FLAGS, MAX_ITEMS_PER_KIND } from './validate.js';
import { checkFlagRules } from './flag-rules.js';

type Actor = Pick<CustomerContext, 'userId' | 'role'>;
export type ItemInput = Record<string, unknown> & { name?: string; sdk_min_version?: string | null };

/** Kind-specific fields kept in `body`, with the defaults a new draft gets. */
const FIELDS: Record<ContentKind, Record<string, unknown>> = {
  onboarding_flow: { steps: [], settings: {} },
  paywall: { layout: {}, plans: [], cta: {}, dismiss: true },
  in_app_message: { message_type: 'modal', content: {}, trigger_rules: {}, audience: {}, priority: 0 },
};
const LABEL: Record<ContentKind, string> = {
  onboarding_flow: 'Onboarding flow',
  paywall: 'Paywall',
  in_app_message: 'In-app message',
};

export function itemView(r: ItemRow) {
  return {
    id: r.id,
    name: r.name,
    status: r.status,
    ...r.body,
    sdk_min_version: r.sdk_min_version,
    published_at: r.published_at?.toISOString() ?? null,
    published_by: r.published_by,
    created_by: r.created_by,
    updated_by: r.updated_by,
    created_at: r.created_at.toISOString(),
    updated_at: r.updated_at.toISOString(),
  };
}

export function flagView(f: FlagRow) {
  return {
    key: f.key,
    enabled: f.enabled,
    rules: f.rules,
    rollout_pct: f.rollout_pct,
    description: f.description,
    sdk_min_version: f.sdk_min_version,
    created_by: f.created_by,
    updated_by: f.updated_by,
    created_at: f.created_at.toISOString(),
    updated_at: f.updated_at.toISOString(),
  };
}

function bodyOf(kind: ContentKind, input: ItemInput, base: Record<string, unknown>): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const [field, dflt] of Object.entries(FIELDS[kind]))
    body[field] = input[field] !== undefined ? input[field] : (base[field] ?? dflt);
  checkFreeForm({ name: input.name, ...body });
  return body;
}

function setIdsOf(kind: ContentKind, body: Record<string, unknown>): string[] {
  if (kind !== 'onboarding_flow' || !Array.isArray(body.steps)) return [];
  const ids = new Set<string>();
  for (const s of body.steps)
    if (s && typeof s === 'object' && typeof (s as { option_set_id?: unknown }).option_set_id === 'string')
      ids.add((s as { option_set_id: string }).option_set_id);
  return [...ids];
}

const withVersion = <T extends object>(view: T, bundle: { bundle_version: number } | null) => ({
  data: bundle ? { ...view, bundle_version: bundle.bundle_version } : view,
  ...(bundle ? { bundle_version: bundle.bundle_version } : {}),
});

export function createContentService({
  store,
  bundles,
  activity,
}: {
  store: ContentStore;
  bundles: Pick<BundleService, 'change'>;
  activity: ActivityStore;
}) {
  async function locked(scope: Scope, kind: ContentKind, id: string, tx: Tx): Promise<ItemRow> {
    const row = await store.getItem(scope, kind, id, tx, true);
    if (!row) throw notFound(LABEL[kind]);
    return row;
  }
  const log = (
    scope: Scope,
    tx: Tx,
    entityType: string,
    entityId: string,
    action: string,
    description: string,
    actor: Actor,
  ) => activity.record(scope, { entityType, entityId, action, description, actorUserId: actor.userId }, tx);

  return {
    async create(scope: Scope, actor: Actor, kind: ContentKind, input: ItemInput) {
      const body = bodyOf(kind, input, {});
      const { result } = await bundles.change(scope, actor.userId, async (tx) => {
        if ((await store.countItems(scope, kind, tx)) >= MAX_ITEMS_PER_KIND)
          throw new AppError('conflict', `An app holds at most ${MAX_ITEMS_PER_KIND} items of this kind`);
        const row = await store.insertItem(
          scope,
          kind,
          {
            name: input.name!,
            body,
            sdk_min_version: input.sdk_min_version ?? null,
            option_set_ids: setIdsOf(kind, body),
          },
          actor.userId,
          tx,
        );
        await log(scope, tx, kind, row.id, 'created', `${LABEL[kind]} "${row.name}" created as a draft`, actor);
        return { result: row, reason: null };
      });
      return { data: itemView(result) };
    },

    async get(scope: Scope, kind: ContentKind, id: string) {
      const row = await store.getItem(scope, kind, id);
      if (!row) throw notFound(LABEL[kind]);
      return { data: itemView(row) };
    },

    async list(scope: Scope, kind: ContentKind, opts: { status?: ItemStatus; limit: number; offset: number }) {
      const { rows, total } = await store.listItems(scope, kind, opts);
      return { data: rows.map(itemView), total };
    },

    /** Editing a published item changes what devices get at once: that needs the publishing role. */
    async update(scope: Scope, actor: Actor, kind: ContentKind, id: string, patch: ItemInput) {
      const { result, bundle } = await bundles.change(scope, actor.userId, async (tx) => {
        const cur = await locked(scope, kind, id, tx);
        const live = cur.status === 'published';
        if (live && !roleAtLeast(actor.role, 'admin'))
          throw forbidden('Changing published content needs the admin role or higher');
        const body = bodyOf(kind, patch, cur.body);
        const sdkMin = patch.sdk_min_version !== undefined ? patch.sdk_min_version : cur.sdk_min_version;
        const row = await store.updateItem(
          scope,
          kind,
          id,
          { name: patch.name ?? cur.name, body, sdk_min_version: sdkMin, option_set_ids: setIdsOf(kind, body) },
          actor.userId,
          tx,
        );
        await log(
          scope,
          tx,
          kind,
          id,
          'updated',
          `${LABEL[kind]} "${row.name}" ${live ? 'updated while published' : 'draft updated'}`,
          actor,
        );
        return { result: row, reason: live ? `${kind}.updated` : null };
      });
      return withVersion(itemView(result), bundle);
    },

    async setStatus(scope: Scope, actor: Actor, kind: ContentKind, id: string, status: ItemStatus) {
      const { result, bundle } = await bundles.change(scope, actor.userId, async (tx) => {
        const cur = await locked(scope, kind, id, tx);
        if (status === 'draft' && cur.status !== 'published')
          throw new AppError('conflict', `${LABEL[kind]} is not published`);
        const row = await store.setStatus(scope, kind, id, status, actor.userId, tx);
        const action = status === 'published' ? 'published' : 'unpublished';
        await log(scope, tx, kind, id, action, `${LABEL[kind]} "${row.name}" ${action}`, actor);
        return { result: row, reason: `${kind}.${action}` };
      });
      return withVersion(itemView(result), bundle);
    },

    async remove(scope: Scope, actor: Actor, kind: ContentKind, id: string) {
      const { result, bundle } = await bundles.change(scope, actor.userId, async (tx) => {
        const cur = await locked(scope, kind, id, tx);
        const live = cur.status === 'published';
        if (live && !roleAtLeast(actor.role, 'admin'))
          throw forbidden('Deleting published content needs the admin role or higher');
        await store.deleteItem(scope, kind, id, tx);
        await log(
          scope,
          tx,
          kind,
          id,
          'deleted',
          `${LABEL[kind]} "${cur.name}" deleted${live ? ' (was published)' : ''}`,
          actor,
        );
        return { result: cur, reason: live ? `${kind}.deleted` : null };
      });
      return withVersion({ id: result.id, deleted: true }, bundle);
    },

    async getRemoteConfig(scope: Scope) {
      const rc = await store.getRemoteConfig(scope);
      return {
        data: { values: rc.values, updated_by: rc.updated_by, updated_at: rc.updated_at?.toISOString() ?? null },
      };
    },

    async putRemoteConfig(scope: Scope, actor: Actor, values: Record<string, unknown>) {
      checkFreeForm({ values });
      const { result, bundle } = await bundles.change(scope, actor.userId, async (tx) => {
        const row = await store.putRemoteConfig(scope, values, actor.userId, tx);
        if (row)
          await log(
            scope,
            tx,
            'remote_config',
            'remote_config',
            'updated',
            `Remote config replaced (${Object.keys(values).length} keys)`,
            actor,
          );
        return {
          result: row ?? (await store.getRemoteConfig(scope, tx)),
          reason: row ? 'remote_config.updated' : null,
        };
      });
      return withVersion(
        { values: result.values, updated_by: result.updated_by, updated_at: result.updated_at?.toISOString() ?? null },
        bundle,
      );
    },

    async listFlags(scope: Scope, opts: { limit: number; offset: number }) {
      const { rows, total } = await store.listFlags(scope, opts);
      return { data: rows.map(flagView), total };
    },

    async getFlag(scope: Scope, key: string) {
      const f = await store.getFlag(scope, key);
      if (!f) throw notFound('Feature flag');
      return { data: flagView(f) };
    },

    async putFlag(
      scope: Scope,
      actor: Actor,
      key: string,
      input: {
        enabled: boolean;
        rules?: unknown[];
        rollout_pct?: number;
        description?: string | null;
        sdk_min_version?: string | null;
      },
    ) {
      const rules = input.rules ?? [];
      checkFreeForm({ rules, description: input.description ?? undefined });
      checkFlagRules(rules);
      const { result, bundle } = await bundles.change(scope, actor.userId, async (tx) => {
        const existing = await store.getFlag(scope, key, tx);
        if (!existing && (await store.countFlags(scope, tx)) >= MAX_FLAGS)
          throw new AppError('conflict', `An app holds at most ${MAX_FLAGS} feature flags`);
        const f = {
          enabled: input.enabled,
          rules,
          rollout_pct: input.rollout_pct ?? 100,
          description: input.description ?? null,
          sdk_min_version: input.sdk_min_version ?? null,
        };
        const r = await store.putFlag(scope, key, f, actor.userId, tx);
        if (r.changed)
          await log(
            scope,
            tx,
            'feature_flag',
            key,
            r.created ? 'created' : 'updated',
            `Feature flag "${key}" ${r.created ? 'created' : 'updated'} (${f.enabled ? 'on' : 'off'}, ${f.rollout_pct}%)`,
            actor,
          );
        return { result: r.row, reason: r.changed ? `feature_flag.${r.created ? 'created' : 'updated'}` : null };
      });
      return withVersion(flagView(result), bundle);
    },

    async removeFlag(scope: Scope, actor: Actor, key: string) {
      const { bundle } = await bundles.change(scope, actor.userId, async (tx) => {
        if (!(await store.deleteFlag(scope, key, tx))) throw notFound('Feature flag');
        await log(scope, tx, 'feature_flag', key, 'deleted', `Feature flag "${key}" deleted`, actor);
        return { result: null, reason: 'feature_flag.deleted' };
      });
      return withVersion({ key, deleted: true }, bundle);
    },
  };
}

export type ContentService = ReturnType<typeof createContentService>;
