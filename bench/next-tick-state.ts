// npm run bench:next-tick [-- --processes 5]
// Diagnosis for the version check's gap to the bare route (issue 33 §5, docs/bundles.md): the cost of
// one process.nextTick call, which every request makes several times, in fresh processes against
// processes that built the service's app (buildApp, no capability plugins, no database), without and
// with the service's shape pins (src/lib/hot-shapes.ts). Each figure is its own process; modes interleave.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ensureServerBuilt } from '../scripts/build-server.mjs';
import { machine, writeResultsSection } from './lib/results.js';
import { nodeCommand, splitCores } from './lib/service.js';

const { values } = parseArgs({ options: { processes: { type: 'string', default: '5' } } });
const processes = Number(values.processes);
const root = path.resolve(import.meta.dirname, '..');
ensureServerBuilt();
const placement = splitCores();
const MODES = ['fresh', 'app', 'app-pinned'] as const;
const runs = new Map<string, number[]>(MODES.map((m) => [m, []]));
for (let i = 0; i < processes; i++)
  for (const mode of MODES) {
    const [cmd, argv] = nodeCommand([path.join(root, 'bench', 'next-tick-child.mjs'), mode], placement);
    const out = JSON.parse(execFileSync(cmd, argv, { cwd: root, encoding: 'utf8' }).trim().split('\n').pop()!);
    runs.get(mode)!.push(out.ns);
    console.log(out);
  }
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const row = (label: string, m: string) => {
  const xs = runs.get(m)!;
  return `| ${label} | ${median(xs).toFixed(0)} | ${xs.map((x) => x.toFixed(0)).join(', ')} |`;
};
writeResultsSection(
  'bundles, version check: process.nextTick in the service process',
  `Command: \`npm run bench:next-tick -- --processes ${processes}\` · ${machine()}

The cost of one \`process.nextTick\` call (ns, scheduling only; the median of 200 batches of 1,000 in each process),
${processes} processes per row, started in turn${placement.cpus ? ` on CPU ${placement.cpus} (taskset)` : ''}. A request to the version check makes several
such calls (stream ends, writes, socket reads), in the service as in the bare route.

| process | median ns | each process |
| --- | ---: | --- |
${row('fresh Node process', 'fresh')}
${row("after the service's app is built (buildApp, no capability plugins, ready)", 'app')}
${row("the same, with the service's shape pins loaded first (src/lib/hot-shapes.ts)", 'app-pinned')}

Why (docs/bundles.md, "The plain-object shape table"): Node builds each tick entry as an object literal whose first key
is a symbol, a shape grown from \`{}\`. When no tick is pending at a full garbage collection, V8 drops that shape, and
the next entry rebuilds it as a new map; the literal's feedback, which recorded the old map, then turns megamorphic
for good, and every later call takes V8's runtime. A large app collects often enough while it starts for this to
happen in most processes. The pins keep one live object of the shape from the process's start.`,
);
