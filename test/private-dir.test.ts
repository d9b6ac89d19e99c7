import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { freePort } from './helpers/processes.js';

// The checkout in a directory only root may enter (0700, as `mktemp -d` and /root are): `npm start`
// and `npm test` must still run their embedded PostgreSQL, which runs as its own user under root.
// The copy is the working tree as it is (tracked and new files, and the build outputs, timestamps
// kept, so `npm start` rebuilds exactly what it would rebuild here) with node_modules hard-linked, so
// PostgreSQL's binaries really sit under the private directory; .test-data shares their filesystem.

const root = path.resolve(import.meta.dirname, '..');
mkdirSync(path.join(root, '.test-data'), { recursive: true });
const privateDir = mkdtempSync(path.join(root, '.test-data', 'private-'));
const clone = path.join(privateDir, 'checkout');
const children: ChildProcess[] = [];

after(() => {
  for (const ch of children) if (ch.exitCode === null && ch.signalCode === null) process.kill(-ch.pid!, 'SIGKILL');
  rmSync(privateDir, { recursive: true, force: true });
});

function copyCheckout(): void {
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: root,
    encoding: 'utf8',
  });
  for (const f of files.split('\0').filter(Boolean)) {
    if (existsSync(path.join(root, f))) cpSync(path.join(root, f), path.join(clone, f), { preserveTimestamps: true });
  }
  for (const built of ['dist', 'console/dist', 'packages/sdk/dist']) {
    if (existsSync(path.join(root, built)))
      cpSync(path.join(root, built), path.join(clone, built), { recursive: true, preserveTimestamps: true });
  }
  for (const modules of ['node_modules', 'console/node_modules']) {
    if (existsSync(path.join(root, modules)))
      execFileSync('cp', ['-al', path.join(root, modules), path.join(clone, modules)]);
  }
}

/** The environment of a user's shell: none of this test run's database settings. */
function userEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of ['TEST_PG_URL', 'TEST_PG_PORT', 'DATABASE_URL', 'DATA_DIR', 'NODE_TEST_CONTEXT']) delete env[k];
  return { ...env, LOG_LEVEL: 'warn', ...extra };
}

function run(args: string[], env: NodeJS.ProcessEnv, cwd = clone): { child: ChildProcess; output: () => string } {
  // A process group of its own, so that clean-up also ends what npm started.
  const child = spawn(process.execPath, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  return { child, output: () => out };
}

const exited = (ch: ChildProcess) =>
  new Promise<number | null>((r) => (ch.exitCode !== null ? r(ch.exitCode) : ch.once('exit', (code) => r(code))));

describe('checkout in a private directory, run as ' + (process.getuid?.() === 0 ? 'root' : 'a user'), () => {
  it('npm start serves and stops, and npm test runs a test file', async () => {
    chmodSync(privateDir, 0o700);
    copyCheckout();
    assert.equal(statSync(privateDir).mode & 0o007, 0, 'others cannot enter the directory above the checkout');

    // npm start (builds what is stale, starts PostgreSQL under ./data, serves) and, beside it, npm test
    // on one test of a small file (its own PostgreSQL under .test-data).
    const port = await freePort();
    // What `npm start` runs, run directly: npm itself dies of the SIGTERM instead of waiting for the service.
    const startScript = JSON.parse(readFileSync(path.join(clone, 'package.json'), 'utf8')).scripts.start as string;
    assert.equal(startScript, 'node scripts/start.mjs');
    const start = run(
      ['scripts/start.mjs'],
      userEnv({ PORT: String(port), HOST: '127.0.0.1', EMBEDDED_PG_PORT: String(await freePort()) }),
    );
    const testArgs = [
      '--import',
      'tsx',
      'scripts/test.mjs',
      '--no-typecheck',
      '--test-name-pattern=ROLE=worker',
      'test/startup.test.ts',
    ];
    const tests = run(testArgs, userEnv({}));

    const until = Date.now() + 200_000; // builds on a busy machine
    for (;;) {
      if (start.child.exitCode !== null) assert.fail(`npm start exited ${start.child.exitCode}:\n${start.output()}`);
      const r = await fetch(`http://127.0.0.1:${port}/api/v1/ingest/health`).catch(() => undefined);
      if (r?.status === 200) break;
      if (Date.now() > until) assert.fail(`npm start not healthy in time:\n${start.output()}`);
      await new Promise((res) => setTimeout(res, 200));
    }
    start.child.kill('SIGTERM');
    assert.equal(await exited(start.child), 0, start.output());

    assert.equal(await exited(tests.child), 0, tests.output());
    assert.match(tests.output(), /ℹ pass 1\n/);
    assert.match(tests.output(), /ℹ fail 0/);
  });

  it('stops at once, in one sentence naming the directory, when the data directory cannot be used', async () => {
    const fails = async (dataDir: string, extra: Record<string, string> = {}) => {
      const r = run(
        ['--import', 'tsx', 'src/main.ts'],
        userEnv({ DATA_DIR: dataDir, PORT: '0', EMBEDDED_PG_PORT: String(await freePort()), ...extra }),
        root,
      );
      assert.equal(await exited(r.child), 1, r.output());
      const lines = r.output().trim().split('\n');
      assert.equal(lines.length, 1, r.output());
      return JSON.parse(lines[0]).msg as string;
    };
    // Unwritable: a file where a directory should be.
    const file = path.join(privateDir, 'a-file');
    writeFileSync(file, '');
    assert.match(
      await fails(path.join(file, 'data')),
      /^start-up failed: DATA_DIR .*a-file\/data is not writable \(ENOTDIR\)/,
    );
    if (process.getuid?.() !== 0) return; // the rest is about the database user root runs PostgreSQL as
    // Under a private directory of another user: not ours to open up.
    const foreign = path.join(privateDir, 'foreign');
    mkdirSync(foreign, { mode: 0o700 });
    chownSync(foreign, 65534, 65534);
    const msg = await fails(path.join(foreign, 'data'), { ENCRYPTION_KEY: randomBytes(32).toString('hex') });
    assert.match(msg, new RegExp(`cannot enter ${foreign} \\(mode 700\\).*Fix: `));
    assert.equal(statSync(foreign).mode & 0o777, 0o700, 'left as it was');
  });
});
