import autocannon from 'autocannon';
import { spawnScript } from './lib/service.js';
const modes = ['full', 'nolog', 'nouuid', 'nohooks'];
const s: Record<string, string> = {};
for (const m of modes) s[m] = (await spawnScript('bench/.exp-app.ts', '/v', { MODE: m })).url;
for (const m of [...modes, ...modes.reverse()]) {
  await autocannon({ url: s[m] + '/v', connections: 16, duration: 1 });
  const r = await autocannon({ url: s[m] + '/v', connections: 16, duration: 3 });
  console.log(m, Math.round(r.requests.average));
}
process.exit(0);
