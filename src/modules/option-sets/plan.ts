import type { ItemVersion, StoredItem } from './store.js';

export interface SyncRow {
  id?: string;
  value: string;
  label: string;
  sort_order?: number;
  option_data?: Record<string, unknown> | null;
}

export type RejectReason = 'value_locked' | 'value_in_use' | 'duplicate_row';

export interface Rejected {
  index: number;
  value: string;
  id?: string;
  reason: RejectReason;
  message: string;
}

const MESSAGES: Record<RejectReason, string> = {
  value_locked: 'The item’s current value is locked by a recorded answer and cannot change',
  value_in_use: 'Another item of this set (or an earlier row of this request) has this value',
  duplicate_row: 'An earlier row of this request already names this item',
};

/** Stable JSON (sorted keys) so option_data compares by content, not key order. */
function canon(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v ?? null);
  if (Array.isArray(v)) return `[${v.map(canon).join(',')}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canon(o[k])}`)
    .join(',')}}`;
}

interface Op {
  index: number;
  row: SyncRow;
  item: StoredItem | null;
  /** Set when the op is refused. */
  reason?: RejectReason;
}

/**
 * Matches rows to stored items (by `id`, else by value; a row with an unknown `id` adopts an
 * id-less item of the same value) and finds duplicates and value renames. Pure: the caller
 * supplies the stored items the rows can touch and, later, the locked values.
 */
export function matchRows(rows: SyncRow[], stored: StoredItem[]) {
  const byExt = new Map<string, StoredItem>();
  const byValue = new Map<string, StoredItem>();
  for (const s of stored) {
    if (s.ext_id !== null) byExt.set(s.ext_id, s);
    byValue.set(s.value, s);
  }
  const touched = new Set<number>();
  const newIds = new Set<string>();
  const ops: Op[] = rows.map((row, index) => {
    let item: StoredItem | null = null;
    if (row.id !== undefined) {
      item = byExt.get(row.id) ?? null;
      if (!item) {
        const sameValue = byValue.get(row.value);
        if (sameValue && sameValue.ext_id === null) item = sameValue;
      }
    } else {
      item = byValue.get(row.value) ?? null;
    }
    const op: Op = { index, row, item };
    if (item) {
      if (touched.has(item.item_id)) op.reason = 'duplicate_row';
      touched.add(item.item_id);
    } else if (row.id !== undefined) {
      if (newIds.has(row.id)) op.reason = 'duplicate_row';
      newIds.add(row.id);
    }
    return op;
  });
  const renamedFrom = ops.filter((o) => !o.reason && o.item && o.item.value !== o.row.value).map((o) => o.item!.value);
  return { ops, stored, renamedFrom };
}

export interface SyncPlan {
  /** Items whose current row ends at this version. */
  close: number[];
  /** New versions (changed, revived and created items). */
  write: ItemVersion[];
  /** Items named by the request, accepted or not: replace mode keeps them. */
  sent: number[];
  created: number;
  updated: number;
  rejected: Rejected[];
}

/**
 * Decides every row. Value uniqueness is checked on the final state, so swaps inside one
 * request work; a refused rename keeps its old value, which can in turn refuse a row that
 * claimed it, hence the loop until nothing changes.
 */
export function planSync(matched: ReturnType<typeof matchRows>, locked: Set<string>): SyncPlan {
  const { ops, stored } = matched;
  for (const op of ops) {
    if (!op.reason && op.item && op.item.value !== op.row.value && locked.has(op.item.value))
      op.reason = 'value_locked';
  }
  const claims = (op: Op) => !op.reason && (!op.item || op.item.value !== op.row.value);
  for (let changed = true; changed; ) {
    changed = false;
    // Values held by stored items that no accepted op moves away from.
    const held = new Set<string>();
    const moving = new Set(ops.filter((o) => claims(o) && o.item).map((o) => o.item!.item_id));
    for (const s of stored) if (!moving.has(s.item_id)) held.add(s.value);
    const claimed = new Set<string>();
    for (const op of ops) {
      if (!claims(op)) continue;
      if (held.has(op.row.value) || claimed.has(op.row.value)) {
        op.reason = 'value_in_use';
        changed = true;
        break; // recompute holders: a refused rename holds its old value again
      }
      claimed.add(op.row.value);
    }
  }

  const plan: SyncPlan = { close: [], write: [], sent: [], created: 0, updated: 0, rejected: [] };
  for (const op of ops) {
    const { row, item } = op;
    if (item) plan.sent.push(item.item_id);
    if (op.reason) {
      plan.rejected.push({
        index: op.index,
        value: row.value,
        ...(row.id !== undefined ? { id: row.id } : {}),
        reason: op.reason,
        message: MESSAGES[op.reason],
      });
      continue;
    }
    const next: ItemVersion = {
      item_id: item?.item_id ?? null,
      ext_id: row.id ?? item?.ext_id ?? null,
      value: row.value,
      label: row.label,
      sort_order: row.sort_order ?? item?.sort_order ?? 0,
      option_data: row.option_data === undefined ? (item?.option_data ?? null) : row.option_data,
    };
    if (!item) {
      plan.write.push(next);
      plan.created++;
      continue;
    }
    const same =
      !item.archived &&
      item.ext_id === next.ext_id &&
      item.value === next.value &&
      item.label === next.label &&
      item.sort_order === next.sort_order &&
      canon(item.option_data) === canon(next.option_data);
    if (same) continue;
    plan.close.push(item.item_id);
    plan.write.push(next);
    plan.updated++;
  }
  return plan;
}
