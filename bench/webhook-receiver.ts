// A local webhook receiver for bench/webhooks.ts, in its own process: answers 200 at once,
// counts deliveries and records end-to-end latency (event timestamp -> arrival).
import http from 'node:http';

let count = 0;
let latencies: number[] = [];
const ids = new Set<string>();
let duplicates = 0;

const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/ready') return res.end('ok');
  if (req.method === 'GET' && req.url === '/stats') {
    const sorted = [...latencies].sort((a, b) => a - b);
    const q = (p: number) =>
      sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] : null;
    res.setHeader('content-type', 'application/json');
    return res.end(JSON.stringify({ count, duplicates, p50: q(0.5), p99: q(0.99), max: q(1) }));
  }
  if (req.method === 'POST' && req.url === '/reset') {
    count = 0;
    duplicates = 0;
    latencies = [];
    ids.clear();
    return res.end('ok');
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    count++;
    const id = String(req.headers['webhook-id']);
    if (ids.has(id)) duplicates++;
    ids.add(id);
    try {
      const ts = Date.parse(JSON.parse(Buffer.concat(chunks).toString('utf8')).timestamp);
      if (Number.isFinite(ts)) latencies.push(Date.now() - ts);
    } catch {
      /* not JSON */
    }
    res.end('ok');
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
