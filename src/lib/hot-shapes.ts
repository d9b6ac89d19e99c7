import { AsyncResource } from 'node:async_hooks';

/**
 * Object shapes every request uses, pinned before the app loads: imported first, for its effect, by
 * src/main.ts (issue 33 §5; docs/bundles.md, "The plain-object shape table").
 *
 * V8 records at most 1,536 shapes grown from the plain object `{}`, one per first property name, and
 * drops a shape whose objects have all died at the next full garbage collection. The app fills that
 * table as it starts: each fast-json-stringify serializer and Ajv validator keeps a `{}` whose first
 * key is a generated, unique name. Once it is full, an object of a dropped or new first key gets a map
 * of its own each time, and every inline cache that meets it misses or calls into V8's runtime: Node's
 * `req.headers` object and its `process.nextTick` entries were measured that way, each at about a tenth
 * of the version check's CPU. One live object of each shape keeps its entry.
 */
const pinned: object[] = [];

/**
 * First keys of the `{}` objects a request makes: Node's `req.headers` takes the request's first header
 * name (Host, from HTTP/1.1 clients; the others for clients that put another first), and Fastify's
 * reply headers take the first header the app sets (x-request-id, in its onRequest hook).
 */
const FIRST_KEYS = ['host', 'user-agent', 'accept', 'content-type', 'authorization', 'x-api-key', 'x-request-id'];

// In a function, not at the module's top level: V8 builds run-once top-level literals another way, and
// the copy of the tick entry then did not take Node's shape (test/hot-shapes.test.ts fails).
function pinHotShapes(): void {
  // Node's process.nextTick entry, { [async_id_symbol], [trigger_async_id_symbol], callback, args }, is
  // also dropped whenever no tick is pending at a full collection; each rebuilt shape then turned the
  // entry's literal megamorphic for good. The two symbols are Node's own (an AsyncResource carries both).
  // The copy is made while a real entry is queued, so it takes Node's shape instead of making one; small
  // integers fit whichever field representation Node's entries gave it.
  const own = Object.getOwnPropertySymbols(new AsyncResource('hot-shapes'));
  const asyncId = own.find((s) => s.description === 'async_id_symbol');
  const triggerId = own.find((s) => s.description === 'trigger_async_id_symbol');
  if (asyncId && triggerId) {
    const callback = () => {};
    process.nextTick(callback);
    pinned.push({ [asyncId]: 0, [triggerId]: 0, callback, args: undefined });
  }
  for (const key of FIRST_KEYS) {
    const header: Record<string, string> = {};
    header[key] = '';
    pinned.push(header);
  }
}

pinHotShapes();
