/**
 * The targeting-rule language of feature flags: one definition, used by the SDK to evaluate and
 * by the service to validate a flag when it is saved (it imports this file from the package).
 *
 * A flag's `rules` is an array; the flag targets a user when every rule matches.
 * A rule: `{ attribute, op, value }` or, for `in` / `not_in`, `{ attribute, op, values }`.
 * `attribute` names a user trait (`traits.plan`), a device attribute (`device.country`), or a bare
 * name looked up in traits first, then the device. A missing attribute matches no operator.
 */
export const OPERATORS = ['eq', 'neq', 'in', 'not_in', 'contains', 'gt', 'lt', 'semver_gte', 'semver_lt'] as const;
export type Operator = (typeof OPERATORS)[number];
export type Scalar = string | number | boolean;
export interface Rule {
  attribute: string;
  op: Operator;
  value?: Scalar;
  values?: Scalar[];
}
export interface RuleProblem {
  /** JSON pointer inside the rules array, e.g. `/2/op`. */
  path: string;
  message: string;
}

export const MAX_RULE_VALUES = 1000;
const SEMVER = /^\d{1,9}(\.\d{1,9}){0,2}$/;
const isScalar = (v: unknown): v is Scalar => typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';

/** Problems of a rules array (empty when valid). */
export function validateRules(rules: unknown): RuleProblem[] {
  if (!Array.isArray(rules)) return [{ path: '', message: 'must be an array of rules' }];
  const out: RuleProblem[] = [];
  rules.forEach((r, i) => {
    const at = (f: string, message: string) => out.push({ path: `/${i}${f}`, message });
    if (!r || typeof r !== 'object' || Array.isArray(r))
      return at('', 'must be an object { attribute, op, value | values }');
    const { attribute, op, value, values } = r as Record<string, unknown>;
    if (typeof attribute !== 'string' || !attribute || attribute.length > 128)
      at('/attribute', 'must be a string of 1 to 128 characters');
    if (!OPERATORS.includes(op as Operator)) return at('/op', `unknown operator; one of ${OPERATORS.join(', ')}`);
    if (op === 'in' || op === 'not_in') {
      if (!Array.isArray(values) || !values.length || values.length > MAX_RULE_VALUES || !values.every(isScalar)) {
        at('/values', `must be an array of 1 to ${MAX_RULE_VALUES} strings, numbers or booleans`);
      }
    } else if (op === 'gt' || op === 'lt') {
      if (typeof value !== 'number' || !isFinite(value)) at('/value', 'must be a number');
    } else if (op === 'semver_gte' || op === 'semver_lt') {
      if (typeof value !== 'string' || !SEMVER.test(value)) at('/value', 'must be a version x, x.y or x.y.z');
    } else if (!isScalar(value)) at('/value', 'must be a string, number or boolean');
  });
  return out;
}

/** Numeric compare of dotted versions (missing parts are 0; a pre-release suffix is ignored). */
export function compareVersions(a: string, b: string): number {
  const pa = a.split(/[-+]/)[0].split('.');
  const pb = b.split(/[-+]/)[0].split('.');
  for (let i = 0; i < 3; i++) {
    const d = (Number(pa[i]) || 0) - (Number(pb[i]) || 0);
    if (d) return d;
  }
  return 0;
}

function matchOne(r: Rule, a: unknown): boolean {
  if (a === undefined || a === null) return false;
  const v = r.value;
  switch (r.op) {
    case 'eq':
      return a === v;
    case 'neq':
      return a !== v;
    case 'in':
      return !!r.values && r.values.includes(a as Scalar);
    case 'not_in':
      return !!r.values && !r.values.includes(a as Scalar);
    case 'contains':
      return Array.isArray(a) ? a.includes(v) : typeof a === 'string' && a.includes(String(v));
    case 'gt':
    case 'lt': {
      const n = typeof a === 'number' ? a : typeof a === 'string' && a.trim() ? Number(a) : NaN;
      if (isNaN(n) || typeof v !== 'number') return false;
      return r.op === 'gt' ? n > v : n < v;
    }
    case 'semver_gte':
    case 'semver_lt': {
      if (typeof a !== 'string' || !SEMVER.test(a.split(/[-+]/)[0]) || typeof v !== 'string') return false;
      const c = compareVersions(a, v);
      return r.op === 'semver_gte' ? c >= 0 : c < 0;
    }
  }
  return false;
}

/** True when every rule matches; `lookup` resolves an attribute name to its value. */
export function matchesRules(rules: Rule[] | undefined, lookup: (attribute: string) => unknown): boolean {
  return !rules || rules.every((r) => matchOne(r, lookup(r.attribute)));
}
