import { roleAtLeast, type CustomerContext, type Scope } from '../../http/auth.js';
import { AppError, forbidden, notFound } from '../../http/errors.js';
import type { Tx } from '../../db/pool.js';
import type { ActivityStore } from '../activity/store.js';
import type { BundleService } from '../bundles/service.js';
import { checkFreeForm } from '../content/validate.js';
import { checkDefinition, DEFAULTS, MAX_EXPERIMENTS_PER_APP, metricsOf, type Variant } from './definitions.js';
import { resultsOf } from './results.js';
import type { ExperimentReadModel } from './read-model.js';
import { isUniqueViolation, type ExperimentRow, type ExperimentStore, type ExperimentWrite } from './store.js';

type Actor = Pick<CustomerContext, 'userId' | 'role'>;

export interface ExperimentInput {
  key?: string;
  name?: string;
  hypothesis?: string | null;
  variants?: Variant[];
  coverage_pct?: number;
  targeting?: { rules: unknown[] } | null;
  primary_metric?: string;
  secondary_metrics?: string[];
  guardrail_metrics?: string[];
  attribution_days?: number;
  sequential_tuning?: number;
}

/** What analysis and assignment rest on: fixed once the experiment has started. */
const FROZEN = [
  'key',
  'variants',
  'primary_metric',
  'secondary_metrics',
  'guardrail_metrics',
  'attribution_days',
] as const;
/** What devices read from the bundle: a change to a started experiment makes a new bundle version. */
const IN_BUNDLE = ['coverage_pct', 'targeting'] as const;

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function experimentView(x: ExperimentRow) {
  return {
    id: x.id,
    key: x.key,
    name: x.name,
    hypothesis: x.hypothesis,
    variants: x.variants,
    coverage_pct: x.coverage_pct,
    targeting: x.targeting,
    primary_metric: x.primary_metric,
    secondary_metrics: x.secondary_metrics,
    guardrail_metrics: x.guardrail_metrics,
    attribution_days: x.attribution_days,
    sequential_tuning: x.sequential_tuning,
    status: x.status,
    started_at: iso(x.started_at),
    stopped_at: iso(x.stopped_at),
    shipped_at: iso(x.shipped_at),
    shipped_variant: x.shipped_variant,
    created_by: x.created_by,
    updated_by: x.updated_by,
    created_at: x.created_at.toISOString(),
    updated_at: x.updated_at.toISOString(),
  };
}

function merged(base: ExperimentWrite | null, input: ExperimentInput): ExperimentWrite {
  const pick = <K extends keyof ExperimentWrite>(k: K, dflt: ExperimentWrite[K]): ExperimentWrite[K] =>
    input[k] !== undefined ? (input[k] as ExperimentWrite[K]) : base ? base[k] : dflt;
  return {
    key: pick('key', ''),
    name: pick('name', ''),
    hypothesis: pick('hypothesis', null),
    variants: pick('variants', []),
    coverage_pct: pick('coverage_pct', DEFAULTS.coverage_pct),
    targeting: pick('targeting', null),
    primary_metric: pick('primary_metric', ''),
    secondary_metrics: pick('secondary_metrics', []),
    guardrail_metrics: pick('guardrail_metrics', []),
    attribution_days: pick('attribution_days', DEFAULTS.attribution_days),
    sequential_tuning: pick('sequential_tuning', DEFAULTS.sequential_tuning),
  };
}

function validated(w: ExperimentWrite): ExperimentWrite {
  checkDefinition(w);
  checkFreeForm({ variants: w.variants, targeting: w.targeting ?? undefined, hypothesis: w.hypothesis ?? undefined });
  return w;
}

/** experiment.shipped webhook data: the app, the experiment as the API shows it, the shipped value. */
const shippedData = (scope: Scope, row: ExperimentRow) => ({
  app_id: scope.appId,
  experiment: experimentView(row),
  shipped_variant: row.shipped_variant,
  value: row.variants.find((v) => v.key === row.shipped_variant)?.value ?? null,
});

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

const duplicateKey = (key: string) =>
  new AppError('conflict', `An experiment with key "${key}" already exists in this app`, [
    { path: '/body/key', message: 'already used by another experiment of this app' },
  ]);

export function createExperimentService({
  store,
  read,
  bundles,
  activity,
  onShipped,
}: {
  store: ExperimentStore;
  read: ExperimentReadModel;
  bundles: Pick<BundleService, 'change'>;
  activity: ActivityStore;
  /** Called after a ship commits (wakes the webhook worker for experiment.shipped). */
  onShipped?: () => void;
}) {
  async function locked(scope: Scope, id: string, tx: Tx): Promise<ExperimentRow> {
    const row = await store.get(scope, id, tx, true);
    if (!row) throw notFound('Experiment');
    return row;
  }
  const log = (scope: Scope, tx: Tx, id: string, action: string, description: string, actor: Actor) =>
    activity.record(
      scope,
      { entityType: 'experiment', entityId: id, action, description, actorUserId: actor.userId },
      tx,
    );
  const withVersion = (x: ExperimentRow, bundle: { bundle_version: number } | null) => ({
    data: bundle ? { ...experimentView(x), bundle_version: bundle.bundle_version } : experimentView(x),
    ...(bundle ? { bundle_version: bundle.bundle_version } : {}),
  });
  const uniqueKey = <T>(key: string, p: Promise<T>) =>
    p.catch((err) => Promise.reject(isUniqueViolation(err) ? duplicateKey(key) : err));

  async function results(scope: Scope, id: string, environment: string) {
    const x = await store.get(scope, id);
    if (!x) throw notFound('Experiment');
    const metrics = metricsOf(x);
    const [sums, asOf] = await Promise.all([
      read.sums(
        x.id,
        environment,
        x.coverage_pct,
        metrics.map((m) => m.metric),
      ),
      read.foldedAt(),
    ]);
    return { data: resultsOf(x, metrics, sums, asOf) };
  }

  /** start, stop, ship: a status change that devices see, in its own bundle version. */
  async function transition(
    scope: Scope,
    actor: Actor,
    id: string,
    to: 'running' | 'stopped' | 'shipped',
    check: (cur: ExperimentRow) => void,
    shipped: string | null = null,
  ) {
    const outbox = (row: ExperimentRow, tx: Tx) =>
      store.outbox(scope, 'experiment.shipped', shippedData(scope, row), tx);
    const { result, bundle } = await bundles.change(scope, actor.userId, async (tx) => {
      const cur = await locked(scope, id, tx);
      check(cur);
      const row = await store.setStatus(scope, id, to, shipped, actor.userId, tx);
      const action = { running: 'started', stopped: 'stopped', shipped: 'shipped' }[to];
      const what = shipped !== null ? ` with variant "${shipped}"` : '';
      await log(scope, tx, id, action, `Experiment "${row.key}" ${action}${what}`, actor);
      // The webhook event commits with the ship itself.
      if (to === 'shipped') await outbox(row, tx);
      return { result: row, reason: `experiment.${action}:${row.key}`.slice(0, 200) };
    });
    return { row: result, bundle };
  }

  return {
    results,

    async create(scope: Scope, actor: Actor, input: ExperimentInput) {
      const w = validated(merged(null, input));
      const { result } = await uniqueKey(
        w.key,
        bundles.change(scope, actor.userId, async (tx) => {
          if ((await store.count(scope, tx)) >= MAX_EXPERIMENTS_PER_APP)
            throw new AppError('conflict', `An app holds at most ${MAX_EXPERIMENTS_PER_APP} experiments`);
          const row = await store.insert(scope, w, actor.userId, tx);
          await log(scope, tx, row.id, 'created', `Experiment "${row.key}" created as a draft`, actor);
          return { result: row, reason: null };
        }),
      );
      return { data: experimentView(result) };
    },

    async get(scope: Scope, id: string) {
      const row = await store.get(scope, id);
      if (!row) throw notFound('Experiment');
      return { data: experimentView(row) };
    },

    async list(scope: Scope, opts: { status?: ExperimentRow['status']; limit: number; offset: number }) {
      const { rows, total } = await store.list(scope, opts);
      return { data: rows.map(experimentView), total };
    },

    /**
     * Drafts: any field, member+. Started: admin+, and only name, hypothesis, sequential_tuning,
     * targeting and a growing coverage; a change devices see makes a new bundle version.
     */
    async update(scope: Scope, actor: Actor, id: string, patch: ExperimentInput) {
      const out = await uniqueKey(
        patch.key ?? '',
        bundles.change(scope, actor.userId, async (tx) => {
          const cur = await locked(scope, id, tx);
          const w = validated(merged(cur, patch));
          const started = cur.status !== 'draft';
          if (started) {
            if (!roleAtLeast(actor.role, 'admin'))
              throw forbidden('Changing a started experiment needs the admin role');
            const frozen = FROZEN.filter((f) => !same(w[f], cur[f]));
            if (frozen.length > 0)
              throw new AppError(
                'conflict',
                `${frozen.join(', ')} cannot change once the experiment has started`,
                frozen.map((f) => ({ path: `/body/${f}`, message: 'frozen once the experiment has started' })),
              );
            if (w.coverage_pct < cur.coverage_pct)
              throw new AppError('conflict', 'coverage_pct may only grow once the experiment has started', [
                { path: '/body/coverage_pct', message: `must be at least ${cur.coverage_pct} (it may only grow)` },
              ]);
          }
          const row = await store.update(scope, id, w, actor.userId, tx);
          const seen = started && IN_BUNDLE.some((f) => !same(w[f], cur[f]));
          await log(
            scope,
            tx,
            id,
            'updated',
            `Experiment "${row.key}" ${started ? 'updated while started' : 'draft updated'}`,
            actor,
          );
          return { result: row, reason: seen ? `experiment.updated:${row.key}`.slice(0, 200) : null };
        }),
      );
      return withVersion(out.result, out.bundle);
    },

    async remove(scope: Scope, actor: Actor, id: string) {
      const { bundle } = await bundles.change(scope, actor.userId, async (tx) => {
        const cur = await locked(scope, id, tx);
        const started = cur.status !== 'draft';
        if (started && !roleAtLeast(actor.role, 'admin'))
          throw forbidden('Deleting a started experiment needs the admin role');
        await store.remove(scope, id, tx);
        await log(
          scope,
          tx,
          id,
          'deleted',
          `Experiment "${cur.key}" deleted${started ? ` (was ${cur.status})` : ''}`,
          actor,
        );
        return { result: null, reason: started ? `experiment.deleted:${cur.key}`.slice(0, 200) : null };
      });
      return {
        data: { id, deleted: true, ...(bundle ? { bundle_version: bundle.bundle_version } : {}) },
        ...(bundle ? { bundle_version: bundle.bundle_version } : {}),
      };
    },

    async start(scope: Scope, actor: Actor, id: string) {
      const r = await transition(scope, actor, id, 'running', (cur) => {
        if (cur.status !== 'draft')
          throw new AppError('conflict', `Only a draft can start (this one is ${cur.status})`);
      });
      return withVersion(r.row, r.bundle);
    },

    async stop(scope: Scope, actor: Actor, id: string) {
      const r = await transition(scope, actor, id, 'stopped', (cur) => {
        if (cur.status !== 'running')
          throw new AppError('conflict', `Only a running experiment can stop (this one is ${cur.status})`);
      });
      return withVersion(r.row, r.bundle);
    },

    /** Ships a variant to everyone; refused while the production sample ratio is off unless acknowledged. */
    async ship(scope: Scope, actor: Actor, id: string, body: { variant: string; acknowledge_srm?: boolean }) {
      const before = await store.get(scope, id);
      if (!before) throw notFound('Experiment');
      if (!before.variants.some((v) => v.key === body.variant))
        throw new AppError('validation_failed', `variant: "${body.variant}" is not a variant of this experiment`, [
          { path: '/body/variant', message: `one of ${before.variants.map((v) => v.key).join(', ')}` },
        ]);
      if (before.status === 'running' || before.status === 'stopped') {
        const srm = (await results(scope, id, 'production')).data.health.srm;
        if (srm.flagged && body.acknowledge_srm !== true)
          throw new AppError(
            'srm_detected',
            `Sample ratio mismatch (chi2 ${srm.chi2?.toFixed(2)}, p ${srm.p_value?.toExponential(2)}): the split is not the configured one; send acknowledge_srm: true to ship anyway`,
          );
      }
      const r = await transition(
        scope,
        actor,
        id,
        'shipped',
        (cur) => {
          if (cur.status !== 'running' && cur.status !== 'stopped')
            throw new AppError('conflict', `Only a running or stopped experiment can ship (this one is ${cur.status})`);
        },
        body.variant,
      );
      onShipped?.();
      return withVersion(r.row, r.bundle);
    },
  };
}

export type ExperimentService = ReturnType<typeof createExperimentService>;
