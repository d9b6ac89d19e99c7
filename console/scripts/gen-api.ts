// Regenerates console/src/api/schema.d.ts from the service's OpenAPI document:
//   node --import tsx console/scripts/gen-api.ts [openapi.json]
// Without a file it starts the service on a throwaway embedded PostgreSQL and reads /docs/json.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { loadConfig } from '../../src/config.js';
import { startServer } from '../../src/server.js';

const consoleDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = path.join(consoleDir, 'src/api/schema.d.ts');

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });

async function fromServer(): Promise<string> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'console-openapi-'));
  const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', ROLE: 'api', EMBEDDED_PG_PORT: String(await freePort()) }, { dataDir });
  const server = await startServer(config, pino({ level: 'warn' }));
  try {
    return await (await fetch(`${server.url}/docs/json`)).text();
  } finally {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const doc = process.argv[2] ? readFileSync(process.argv[2], 'utf8') : await fromServer();
const tmp = path.join(os.tmpdir(), `openapi-${process.pid}.json`);
writeFileSync(tmp, doc);
execFileSync(path.join(consoleDir, 'node_modules/.bin/openapi-typescript'), [tmp, '-o', out], { stdio: 'inherit' });
rmSync(tmp);
