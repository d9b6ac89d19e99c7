import { Type, type TSchema } from '@sinclair/typebox';
import {
  DEFAULTS,
  EXPERIMENT_KEY_PATTERN,
  MAX_METRICS,
  MAX_VARIANTS,
  MIN_VARIANTS,
  VARIANT_KEY_PATTERN,
} from './definitions.js';

const N = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
const Metric = Type.String({
  minLength: 1,
  maxLength: 140,
  description: 'trial_started, paid_conversion, revenue, onboarding_completed, refund_rate or event:<event_name>',
});
const Metrics = Type.Array(Metric, { maxItems: MAX_METRICS });

export const Variant = Type.Object({
  key: Type.String({ pattern: VARIANT_KEY_PATTERN }),
  weight: Type.Integer({ minimum: 1, maximum: 99, description: 'Percent of the covered units; weights sum to 100' }),
  value: Type.Unknown({ description: 'What getExperiment returns for this variant (free-form JSON)' }),
});
const Targeting = Type.Object(
  {
    rules: Type.Array(Type.Unknown(), {
      maxItems: 100,
      description: 'The feature-flag rule language (packages/sdk README); all must match',
    }),
  },
  { additionalProperties: false },
);

const Fields = {
  name: Type.String({ minLength: 1, maxLength: 200 }),
  hypothesis: N(Type.String({ maxLength: 5000 })),
  variants: Type.Array(Variant, {
    minItems: MIN_VARIANTS,
    maxItems: MAX_VARIANTS,
    description: 'The first is the control; frozen once started',
  }),
  coverage_pct: Type.Integer({
    minimum: 1,
    maximum: 100,
    description: `Percent of units in the experiment (default ${DEFAULTS.coverage_pct}); may only grow once started`,
  }),
  targeting: N(Targeting),
  primary_metric: Metric,
  secondary_metrics: Metrics,
  guardrail_metrics: Metrics,
  attribution_days: Type.Integer({ minimum: 1, maximum: 90, description: `Default ${DEFAULTS.attribution_days}` }),
  sequential_tuning: Type.Integer({
    minimum: 1,
    maximum: 1_000_000_000,
    description: `N* of the always-valid interval (default ${DEFAULTS.sequential_tuning})`,
  }),
};
const Key = Type.String({
  pattern: EXPERIMENT_KEY_PATTERN,
  description: 'Unique per app; the experimentId of bucketing',
});

export const CreateBody = Type.Object({
  key: Key,
  name: Fields.name,
  hypothesis: Type.Optional(Fields.hypothesis),
  variants: Fields.variants,
  coverage_pct: Type.Optional(Fields.coverage_pct),
  targeting: Type.Optional(Fields.targeting),
  primary_metric: Fields.primary_metric,
  secondary_metrics: Type.Optional(Fields.secondary_metrics),
  guardrail_metrics: Type.Optional(Fields.guardrail_metrics),
  attribution_days: Type.Optional(Fields.attribution_days),
  sequential_tuning: Type.Optional(Fields.sequential_tuning),
});

export const PatchBody = Type.Partial(CreateBody);

export const Experiment = Type.Object({
  id: Type.String(),
  key: Type.String(),
  ...Fields,
  status: Type.Union(['draft', 'running', 'stopped', 'shipped'].map((s) => Type.Literal(s))),
  started_at: N(Type.String({ format: 'date-time' })),
  stopped_at: N(Type.String({ format: 'date-time' })),
  shipped_at: N(Type.String({ format: 'date-time' })),
  shipped_variant: N(Type.String()),
  created_by: N(Type.String()),
  updated_by: N(Type.String()),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
  bundle_version: Type.Optional(Type.Integer({ description: 'The bundle version this change produced' })),
});

export const Changed = Type.Object({
  data: Experiment,
  bundle_version: Type.Optional(Type.Integer({ description: 'The bundle version this change produced, if any' })),
});

export const ShipBody = Type.Object({
  variant: Type.String({ minLength: 1, maxLength: 64 }),
  acknowledge_srm: Type.Optional(
    Type.Boolean({ description: 'Ship even though the sample ratio mismatch test fails' }),
  ),
});

const Num = N(Type.Number());
const Ci = N(Type.Array(Type.Number(), { minItems: 2, maxItems: 2, description: '[low, high]' }));

export const Results = Type.Object({
  experiment_id: Type.String(),
  key: Type.String(),
  status: Type.String(),
  as_of: N(Type.String({ format: 'date-time', description: 'When the experiment fold last ran' })),
  variants: Type.Array(
    Type.Object({
      key: Type.String(),
      weight: Type.Integer(),
      devices: Type.Integer({ description: 'Devices analysed' }),
    }),
  ),
  health: Type.Object({
    srm: Type.Object({ chi2: Num, p_value: Num, flagged: Type.Boolean() }),
    multiple_variant_devices: Type.Integer(),
    assignment_mismatches: Type.Integer(),
  }),
  metrics: Type.Array(
    Type.Object({
      metric: Type.String(),
      kind: Type.Union([Type.Literal('proportion'), Type.Literal('mean'), Type.Literal('ratio')]),
      role: Type.Union([Type.Literal('primary'), Type.Literal('secondary'), Type.Literal('guardrail')]),
      variants: Type.Array(
        Type.Object({
          key: Type.String(),
          n: Type.Integer(),
          sum: Type.Number(),
          sum_squares: Type.Number(),
          mean: Num,
          variance: Num,
          denominator_sum: Type.Optional(Type.Number()),
          denominator_sum_squares: Type.Optional(Type.Number()),
          sum_products: Type.Optional(Type.Number()),
        }),
      ),
      comparisons: Type.Array(
        Type.Object({
          variant: Type.String(),
          baseline: Type.String(),
          absolute: Type.Object({ estimate: Num, ci_95: Ci, p_value: Num }),
          relative: Type.Object({ estimate: Num, ci_95: Ci }),
          sequential: Type.Object({ ci_95: Ci }),
        }),
      ),
    }),
  ),
});
