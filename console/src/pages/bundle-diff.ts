/** One content item's change between two bundle versions. */
export interface ItemChange {
  section: string;
  key: string;
  change: 'added' | 'removed' | 'changed';
  /** The item's name when it has one (flows, paywalls, messages are keyed by id). */
  name?: string;
}

type Content = Record<string, unknown>;

/**
 * What changed from bundle content `a` to `b`, per section (paywalls, feature_flags, ...) and
 * item key, sorted. Items compare by their JSON text: the server serializes them in a fixed order.
 */
export function diffBundles(a: Content, b: Content): ItemChange[] {
  const out: ItemChange[] = [];
  for (const section of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const before = (a[section] ?? {}) as Record<string, unknown>;
    const after = (b[section] ?? {}) as Record<string, unknown>;
    for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
      const item = (after[key] ?? before[key]) as { name?: unknown } | null;
      const name = item && typeof item === 'object' && typeof item.name === 'string' ? item.name : undefined;
      if (!(key in before)) out.push({ section, key, name, change: 'added' });
      else if (!(key in after)) out.push({ section, key, name, change: 'removed' });
      else if (JSON.stringify(before[key]) !== JSON.stringify(after[key]))
        out.push({ section, key, name, change: 'changed' });
    }
  }
  return out.sort((x, y) => x.section.localeCompare(y.section) || x.key.localeCompare(y.key));
}
