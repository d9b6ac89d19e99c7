/**
 * One rule for every number a client sends (docs/api-conventions.md, "Numbers"): it is finite and
 * within ±Number.MAX_SAFE_INTEGER, so what is stored and compared is exactly what was sent. In a URL
 * (query string, path) it is also written in plain decimal digits: `0x10`, `1e2`, `1_000`, ` 5`, an
 * empty value and a parameter given twice are refused rather than read as something the client may
 * not have meant.
 */

const DECIMAL_TEXT = /^-?\d+(\.\d+)?$/;
const INTEGER_TEXT = /^-?\d+$/;

export type NumericKind = 'integer' | 'number';

/** Why a parsed number cannot be taken, or null when it can. */
export function numberProblem(n: number): string | null {
  if (!Number.isFinite(n)) return 'is not a finite number';
  if (Math.abs(n) > Number.MAX_SAFE_INTEGER) return `is beyond ±${Number.MAX_SAFE_INTEGER}`;
  return null;
}

/** Why a URL parameter's raw value is not a number of that kind, or null when it is one. */
export function numericTextProblem(raw: unknown, kind: NumericKind): string | null {
  if (Array.isArray(raw)) return 'is given more than once';
  if (typeof raw !== 'string') return null;
  const pattern = kind === 'integer' ? INTEGER_TEXT : DECIMAL_TEXT;
  if (!pattern.test(raw))
    return kind === 'integer' ? 'must be an integer in decimal digits' : 'must be a number in decimal digits';
  return numberProblem(Number(raw));
}

type Schema = { type?: unknown; anyOf?: Schema[]; oneOf?: Schema[]; properties?: Record<string, Schema> };

/** The number kind a parameter's schema takes (a union counts when every branch is a number), or null. */
function kindOf(s: Schema): NumericKind | null {
  if (s.type === 'integer' || s.type === 'number') return s.type;
  const alt = s.anyOf ?? s.oneOf;
  if (!alt?.length) return null;
  const kinds = alt.map(kindOf);
  if (kinds.some((k) => k === null)) return null;
  return kinds.includes('number') ? 'number' : 'integer';
}

/** The numeric parameters of a query-string or path schema, by name; empty for none. */
export function numericParams(schema: unknown): [string, NumericKind][] {
  const props = (schema as Schema | undefined)?.properties ?? {};
  const out: [string, NumericKind][] = [];
  for (const [name, s] of Object.entries(props)) {
    const kind = kindOf(s);
    if (kind) out.push([name, kind]);
  }
  return out;
}

/** The first numeric parameter whose raw value breaks the rule, with why, or null. */
export function findNumericParamProblem(
  params: [string, NumericKind][],
  values: Record<string, unknown> | undefined,
): { name: string; message: string } | null {
  if (!values) return null;
  for (const [name, kind] of params) {
    if (!(name in values)) continue;
    const message = numericTextProblem(values[name], kind);
    if (message) return { name, message };
  }
  return null;
}
