// Child process of bench/next-tick-state.ts: what one process.nextTick call costs (ns, scheduling
// only, median of 200 batches of 1,000) in a fresh process, or after the service's app is built,
// with or without the service's shape pins (src/lib/hot-shapes.ts, loaded first as src/main.ts does).
const mode = process.argv[2];
if (mode === 'app-pinned') await import('../dist/lib/hot-shapes.js');
if (mode !== 'fresh') {
  const { default: pino } = await import('pino');
  const { buildApp } = await import('../dist/app.js');
  const app = await buildApp({ logger: pino({ level: 'silent' }), plugins: [], version: 'bench' });
  await app.ready();
}
await new Promise((r) => setTimeout(r, 500));
const noop = () => {};
const batches = [];
for (let b = 0; b < 200; b++) {
  const t = process.hrtime.bigint();
  for (let i = 0; i < 1000; i++) process.nextTick(noop);
  batches.push(Number(process.hrtime.bigint() - t) / 1000);
  await new Promise((r) => setImmediate(r));
}
batches.sort((a, b) => a - b);
console.log(JSON.stringify({ mode, ns: batches[100] }));
process.exit(0);
