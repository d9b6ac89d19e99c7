// `npm test`: type-check, start one embedded PostgreSQL for the whole run, run every test file
// (each creates its own database on it), then stop the server whatever the outcome.
import { execFileSync, spawn } from 'node:child_process';
import { readdirSync, rmSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureSdkBuilt } from './build-sdk.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
process.chdir(root);
const args = process.argv.slice(2);
const only = args.filter((a) => !a.startsWith('--'));
// Passed on to node's runner: `--test-name-pattern=<regex>` runs the matching tests of the files.
const runnerArgs = args.filter((a) => a.startsWith('--test-name-pattern='));

ensureSdkBuilt();
if (!args.includes('--no-typecheck')) {
  // Formatting and lint rules (biome.json) for server, SDK and console: a violation fails the run.
  console.log('format and lint…');
  execFileSync(process.execPath, ['node_modules/@biomejs/biome/bin/biome', 'ci', '--colors=off', '.'], {
    stdio: 'inherit',
  });
  console.log('type-checking…');
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.check.json'], {
    stdio: 'inherit',
  });
  // The React bindings with their own settings (DOM, bundler resolution), as their build sees them.
  execFileSync(
    process.execPath,
    ['node_modules/typescript/bin/tsc', '-p', 'packages/react/tsconfig.json', '--noEmit'],
    {
      stdio: 'inherit',
    },
  );
  // The console with its workspace's own TypeScript (Vite's build does not type-check).
  execFileSync(process.execPath, ['console/node_modules/typescript/bin/tsc', '-p', 'console/tsconfig.json'], {
    stdio: 'inherit',
  });
  // The example app (examples/paywall-demo), against the built SDK and bindings it imports.
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'examples/paywall-demo/tsconfig.json'], {
    stdio: 'inherit',
  });
}

// npm test runs this file under tsx, so the TypeScript source imports directly.
const { startEmbeddedDb } = await import('../src/db/embedded.ts');

// A free port and a private directory per run, so several runs can share the machine. Another
// process can take the free port before PostgreSQL binds it (seen on a loaded machine): a start that
// fails is tried again on another free port, twice at most.
let port;
let dataDir;
let pg;
for (let attempt = 1; !pg; attempt++) {
  port = process.env.TEST_PG_PORT ? Number(process.env.TEST_PG_PORT) : await freePort();
  dataDir = path.join(root, '.test-data', `run-${port}`);
  rmSync(dataDir, { recursive: true, force: true });
  pg = await startEmbeddedDb(dataDir, port, (m) => console.log(m), 'postgres').catch((err) => {
    // A start-up that cannot work (an unreachable, unwritable or full directory) says why in one line.
    console.error(`test database server did not start: ${err?.message ?? err}`);
    rmSync(dataDir, { recursive: true, force: true });
    if (process.env.TEST_PG_PORT || attempt >= 3) process.exit(1);
    return undefined;
  });
}
console.log(`test database server on port ${port}`);

const files = only.length
  ? only
  : readdirSync('test', { recursive: true })
      .map(String)
      .filter((f) => f.endsWith('.test.ts'))
      .map((f) => path.join('test', f))
      .sort();

const code = await new Promise((resolve) => {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '--test',
      '--test-concurrency=2',
      '--test-timeout=300000',
      // Each file's process exits on its own once its tests and hooks are done (its servers stopped):
      // a handle left open keeps it alive, and the file then fails at the timeout above, named
      // ("test timed out"), with what holds it printed by test/helpers/linger.ts. Every file was seen
      // to exit on its own (README, Tests). `--force-exit` ends each file's process after its last
      // test instead (node's --test-force-exit), to get past a linger while it is being found;
      // `--no-force-exit`, the default, is still accepted.
      ...(args.includes('--force-exit') ? ['--test-force-exit'] : []),
      '--test-reporter=spec',
      ...runnerArgs,
      ...files,
    ],
    {
      stdio: 'inherit',
      env: {
        ...process.env,
        TEST_PG_URL: pg.url,
        TEST_PG_PORT: String(port),
        LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent',
      },
    },
  );
  child.on('exit', (c) => resolve(c ?? 1));
});
await pg.stop();
rmSync(dataDir, { recursive: true, force: true });
process.exit(code);

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port: p } = srv.address();
      srv.close(() => resolve(p));
    });
    srv.on('error', reject);
  });
}
