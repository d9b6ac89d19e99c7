// `npm run openapi [-- <file>]`: writes the service's OpenAPI document (default ./openapi.json).
// The routes are composed with their stores, which read the database while composing, so the service
// starts on a throwaway embedded PostgreSQL (a few seconds) and stops again; with a running server,
// `curl http://<host>:<port>/docs/json` gives the same document.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';

const { loadConfig } = await import('../src/config.ts');
const { startServer } = await import('../src/server.ts');

const out = path.resolve(process.argv[2] ?? 'openapi.json');
const port = await new Promise((resolve) => {
  const s = net.createServer().listen(0, '127.0.0.1', () => {
    const p = s.address().port;
    s.close(() => resolve(p));
  });
});
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'openapi-'));
const env = { PORT: '0', HOST: '127.0.0.1', ROLE: 'api', EMBEDDED_PG_PORT: String(port) };
const server = await startServer(loadConfig(env, { dataDir }), pino({ level: 'warn' }, pino.destination(2)));
try {
  writeFileSync(out, `${JSON.stringify(server.app.swagger(), null, 2)}\n`);
  console.error(`wrote ${out}`);
} finally {
  await server.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
