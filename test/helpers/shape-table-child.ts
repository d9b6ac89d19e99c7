// Child process of test/hot-shapes.test.ts, run with --allow-natives-syntax and --expose-gc: fills V8's
// table of shapes grown from `{}` as the app's schema compilers do, then reports whether objects of the
// shapes src/lib/hot-shapes.ts pins still share one map. Prints one JSON line.
import { createHook } from 'node:async_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

const pinned = process.argv[2] === 'pinned';
if (pinned) await import('../../src/lib/hot-shapes.js');

// V8's own test of whether two objects have one map (natives syntax, hence a Function, not source).
const haveSameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: object, b: object) => boolean;
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');

const kept: object[] = [];
let n = 0;
/** `{}` objects with generated, unique first keys, kept alive (as a serializer keeps its `{}`). */
function fill(count: number) {
  for (let i = 0; i < count; i++) {
    const o: Record<string, number> = {};
    o[`generated_${n++}`] = i;
    kept.push(o);
  }
}
function sameShape(key: string) {
  const a: Record<string, string> = {};
  a[key] = 'a';
  const b: Record<string, string> = {};
  b[key] = 'b';
  return haveSameMap(a, b);
}

fill(2000);
// No tick pending: full collections drop the shapes whose objects all died (Node's tick entry's among
// them), and more generated keys take the places they freed, as the app's start-up does.
await sleep(10);
gc();
gc();
gc();
fill(200);
const ticks: object[] = [];
const hook = createHook({
  init(_id, type, _trigger, resource) {
    if (type === 'TickObject') ticks.push(resource as object);
  },
});
hook.enable();
process.nextTick(() => {});
process.nextTick(() => {});
hook.disable();
console.log(
  JSON.stringify({
    full: !sameShape('never-seen-before'),
    host: sameShape('host'),
    xApiKey: sameShape('x-api-key'),
    tick: haveSameMap(ticks[0], ticks[1]),
  }),
);
