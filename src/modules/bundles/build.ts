import { maxSemver } from '../content/validate.js';
import type { PublishedContent } from '../content/store.js';

export interface OptionSetPage {
  version: number;
  items: unknown[];
  next_cursor: string | null;
}

export const DEFAULT_SDK_MIN_VERSION = '1.0.0';

/** A started experiment as devices need it (decisions §10). */
export interface BundledExperiment {
  key: string;
  status: string;
  variants: { key: string; weight: number; value: unknown }[];
  coverage_pct: number;
  targeting: { rules: unknown[] } | null;
  shipped_variant: string | null;
}

/** What a bundle is built from: the published content and the started experiments. */
export type BundleSource = PublishedContent & { experiments?: BundledExperiment[] };

/** Set ids the published flows reference (steps[].option_set_id), deduplicated. */
export function referencedSets(src: PublishedContent): string[] {
  const ids = new Set<string>();
  for (const it of src.items) if (it.kind === 'onboarding_flow') for (const id of it.option_set_ids) ids.add(id);
  return [...ids];
}

/**
 * The bundle's `content` in the spec's shape: exactly the published content, maps keyed by id
 * (ordered by id so equal content gives equal bytes).
 */
export function buildContent(src: BundleSource, pages: Record<string, OptionSetPage>): Record<string, unknown> {
  const onboarding_flows: Record<string, unknown> = {};
  const paywalls: Record<string, unknown> = {};
  const in_app_messages: Record<string, unknown> = {};
  for (const it of src.items) {
    const b = it.body;
    const published_at = it.published_at ? it.published_at.toISOString() : null;
    if (it.kind === 'onboarding_flow') {
      const entry: Record<string, unknown> = {
        id: it.id,
        name: it.name,
        steps: b.steps ?? [],
        settings: b.settings ?? {},
        published_at,
      };
      const sets: Record<string, OptionSetPage> = {};
      for (const id of it.option_set_ids) if (pages[id]) sets[id] = pages[id];
      if (Object.keys(sets).length > 0) entry.option_sets = sets;
      onboarding_flows[it.id] = entry;
    } else if (it.kind === 'paywall') {
      paywalls[it.id] = {
        id: it.id,
        name: it.name,
        layout: b.layout ?? {},
        plans: b.plans ?? [],
        cta: b.cta ?? {},
        dismiss: b.dismiss ?? true,
        published_at,
      };
    } else {
      in_app_messages[it.id] = {
        id: it.id,
        name: it.name,
        message_type: b.message_type,
        content: b.content ?? {},
        trigger_rules: b.trigger_rules ?? {},
        audience: b.audience ?? {},
        priority: b.priority ?? 0,
      };
    }
  }
  const feature_flags: Record<string, unknown> = {};
  for (const f of src.flags)
    feature_flags[f.key] = { key: f.key, enabled: f.enabled, rules: f.rules, rollout_pct: f.rollout_pct };
  const content: Record<string, unknown> = {
    onboarding_flows,
    paywalls,
    remote_config: src.remoteConfig,
    feature_flags,
    in_app_messages,
  };
  // Only when the app has a started experiment: bundles of apps without one keep their bytes.
  if (src.experiments?.length) content.experiments = experimentsOf(src.experiments);
  return content;
}

function experimentsOf(list: BundledExperiment[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const x of list)
    out[x.key] = {
      key: x.key,
      status: x.status,
      variants: x.variants.map((v) => ({ key: v.key, weight: v.weight, value: v.value })),
      coverage_pct: x.coverage_pct,
      ...(x.targeting ? { targeting: x.targeting } : {}),
      ...(x.shipped_variant !== null ? { shipped_variant: x.shipped_variant } : {}),
    };
  return out;
}

/** Highest minimum any published item or flag declares; the app's floor (if set) counts too. */
export function sdkMinVersion(src: PublishedContent, appFloor: string | null): string {
  return maxSemver(
    [appFloor, ...src.items.map((i) => i.sdk_min_version), ...src.flags.map((f) => f.sdk_min_version)],
    DEFAULT_SDK_MIN_VERSION,
  );
}
