/**
 * The automatic events' names and properties, as the analytics definitions read them
 * (decisions §4): typed builders, checked before anything is queued.
 */
export interface Purchase {
  product_id: string;
  /** Required for `purchase_completed` (revenue); a number in `currency`. */
  price?: number;
  /** ISO 4217, three capital letters; the service assumes USD when absent. */
  currency?: string;
  /** ISO 8601 subscription period: P1W, P1M, P3M, P6M, P1Y; absent for one-time purchases. */
  period?: string;
  is_trial?: boolean;
  [extra: string]: unknown;
}
export type PurchaseKind = 'started' | 'completed' | 'failed' | 'canceled' | 'pending' | 'restored';

const CURRENCY = /^[A-Z]{3}$/;
const PERIOD = /^P\d{1,3}[DWMY]$/;

/** `[event_name, properties]` of a purchase event; throws a TypeError naming every bad field. */
export function purchaseEvent(kind: PurchaseKind, p: Purchase): [string, Record<string, unknown>] {
  const bad: string[] = [];
  const { product_id: id, price, currency, period, is_trial: trial } = p ?? ({} as Purchase);
  if (typeof id !== 'string' || !id) bad.push('product_id: a non-empty string');
  if (price !== undefined ? typeof price !== 'number' || !(price >= 0) || price === Infinity : kind === 'completed')
    bad.push('price: a finite number >= 0');
  if (currency !== undefined && (typeof currency !== 'string' || !CURRENCY.test(currency)))
    bad.push('currency: ISO 4217, e.g. USD');
  if (period !== undefined && (typeof period !== 'string' || !PERIOD.test(period)))
    bad.push('period: ISO 8601, e.g. P1M');
  if (trial !== undefined && typeof trial !== 'boolean') bad.push('is_trial: a boolean');
  if (bad.length) throw new TypeError(`purchase_${kind}: ${bad.join('; ')}`);
  return [`purchase_${kind}`, { ...p }];
}

/** A push event's properties; throws a TypeError for an empty id or token. */
export function pushEvent(name: string, field: string, value: string): [string, Record<string, unknown>] {
  if (typeof value !== 'string' || !value) throw new TypeError(`${name}: ${field} must be a non-empty string`);
  return [name, { [field]: value }];
}
