import { SEGMENT_EVENTS } from './constants.js';
import type { Storage } from './storage.js';

export interface Queued {
  id: string;
  /** The event's client_seq: flush sends the events queued before its call. */
  seq: number;
  json: string;
}
type Stored = { event_id: string; context?: { client_seq?: number } };
const item = (e: Stored): Queued => ({ id: e.event_id, seq: e.context?.client_seq ?? 0, json: JSON.stringify(e) });
interface Segment {
  index: number;
  items: Queued[];
}
interface Meta {
  first: number;
  dropped: number;
}

/** UTF-8 length of a string, without allocating. */
export function byteLength(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80) n += c < 0x800 ? 1 : c >= 0xd800 && c < 0xdc00 ? 1 : 2;
    if (c >= 0xd800 && c < 0xdc00) i++;
  }
  return n;
}

/**
 * The persisted event queue. Events live in numbered segments of up to SEGMENT_EVENTS events
 * (`<prefix>q.<n>`); `<prefix>q.meta` holds the first segment's number and the count of events
 * dropped by the byte cap and not yet reported on an event. Appending rewrites only the last
 * segment; acknowledging rewrites or removes the first ones. On load, segments are read from
 * `first` until one is missing, so a new segment needs no meta write.
 */
export class EventQueue {
  private segs: Segment[] = [];
  private meta: Meta = { first: 0, dropped: 0 };
  private lock: Promise<unknown> = Promise.resolve();
  bytes = 0;
  count = 0;

  private constructor(
    private storage: Storage,
    private prefix: string,
    public maxBytes: number,
  ) {}

  static async load(storage: Storage, prefix: string, maxBytes: number): Promise<EventQueue> {
    const q = new EventQueue(storage, prefix, maxBytes);
    const meta = await storage.getItem(q.key('meta'));
    if (meta) q.meta = JSON.parse(meta);
    for (let i = q.meta.first; ; i++) {
      const text = await storage.getItem(q.key(i));
      if (text === null) break;
      const items = (JSON.parse(text) as Stored[]).map(item);
      q.segs.push({ index: i, items });
      for (const it of items) q.account(it, 1);
    }
    return q;
  }

  /** Events dropped by the cap that no event has reported yet. */
  get dropped(): number {
    return this.meta.dropped;
  }

  /**
   * Persists one event (after dropping the oldest ones if the cap needs room) and returns how
   * many were dropped for it. `reported` drops, carried on this event, leave the counter.
   */
  push(event: Stored, reported = 0): Promise<number> {
    return this.locked(async () => {
      const it = item(event);
      const size = byteLength(it.json);
      const touched = new Set<Segment>();
      let dropped = 0;
      while (this.count && this.bytes + size > this.maxBytes) {
        const head = this.segs.find((s) => s.items.length)!;
        this.account(head.items.shift()!, -1);
        touched.add(head);
        dropped++;
      }
      let tail = this.segs[this.segs.length - 1];
      if (!tail || tail.items.length >= SEGMENT_EVENTS) {
        tail = { index: tail ? tail.index + 1 : this.meta.first, items: [] };
        this.segs.push(tail);
      }
      tail.items.push(it);
      this.account(it, 1);
      touched.add(tail);
      const carried = this.meta.dropped - reported + dropped;
      const metaChanged = carried !== this.meta.dropped;
      this.meta.dropped = carried;
      await this.persist(touched, metaChanged);
      return dropped;
    });
  }

  /** The client_seq of the newest event, -1 when empty. */
  lastSeq(): number {
    for (let i = this.segs.length - 1; i >= 0; i--) {
      const items = this.segs[i].items;
      if (items.length) return items[items.length - 1].seq;
    }
    return -1;
  }

  /** The oldest `n` events, in order. */
  peek(n: number): Queued[] {
    const out: Queued[] = [];
    for (const s of this.segs) {
      for (const it of s.items) {
        if (out.length >= n) return out;
        out.push(it);
      }
    }
    return out;
  }

  /** Removes acknowledged (or rejected) events. */
  remove(ids: Iterable<string>): Promise<void> {
    return this.locked(async () => {
      const left = new Set(ids);
      const touched = new Set<Segment>();
      for (const s of this.segs) {
        if (!left.size) break;
        const kept = s.items.filter((it) => !left.delete(it.id));
        if (kept.length === s.items.length) continue;
        for (const it of s.items) if (!kept.includes(it)) this.account(it, -1);
        s.items = kept;
        touched.add(s);
      }
      await this.persist(touched, false);
    });
  }

  private async persist(touched: Set<Segment>, metaChanged: boolean): Promise<void> {
    // Empty segments at the head go: the meta moves past them first, then their keys are removed.
    const gone: Segment[] = [];
    while (this.segs.length && !this.segs[0].items.length) gone.push(this.segs.shift()!);
    if (gone.length) this.meta.first = this.segs.length ? this.segs[0].index : gone[gone.length - 1].index + 1;
    if (gone.length || metaChanged) await this.storage.setItem(this.key('meta'), JSON.stringify(this.meta));
    for (const s of touched) {
      if (gone.includes(s)) continue;
      await this.storage.setItem(this.key(s.index), `[${s.items.map((it) => it.json).join(',')}]`);
    }
    for (const s of gone) await this.storage.removeItem(this.key(s.index));
  }

  private account(it: Queued, sign: 1 | -1): void {
    this.bytes += sign * byteLength(it.json);
    this.count += sign;
  }

  private key(part: string | number): string {
    return `${this.prefix}q.${part}`;
  }

  private locked<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.lock.then(fn, fn);
    this.lock = run.catch(() => undefined);
    return run;
  }
}
