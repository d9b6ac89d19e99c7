/**
 * Answers of a pinned version never change (versions are immutable), so they cache safely in
 * process memory as ready-to-send JSON: no invalidation, correct across instances. Bounded by bytes.
 */
export function createPageCache(maxBytes: number) {
  const entries = new Map<string, string>();
  let bytes = 0;
  const size = (key: string, json: string) => 100 + 2 * (key.length + json.length);
  return {
    get(key: string): string | undefined {
      const e = entries.get(key);
      if (e === undefined) return undefined;
      entries.delete(key);
      entries.set(key, e); // most recently used last
      return e;
    },
    set(key: string, json: string): void {
      const n = size(key, json);
      if (n > maxBytes / 4 || entries.has(key)) return;
      entries.set(key, json);
      bytes += n;
      for (const [k, e] of entries) {
        if (bytes <= maxBytes) break;
        entries.delete(k);
        bytes -= size(k, e);
      }
    },
  };
}
