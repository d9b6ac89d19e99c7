import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { ONE_CLIENT_ADDRESS, testEncryptionKey } from './test-env.js';

/** A free TCP port on 127.0.0.1 (kept for the instance across restarts, as a load balancer would). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

export interface Instance {
  /** 'all': the API and the workers in one process (as a single node runs). */
  role: 'api' | 'worker' | 'all';
  /** The HTTP port: the API, or a worker's operations endpoints (OPS_PORT). */
  port: number;
  url: string;
  proc?: ChildProcess;
  /** The last lines the process wrote to stderr and stdout, for failure messages. */
  tail: string[];
}

/** Settings every instance of one test cluster shares (one database, one data directory, one key). */
export function clusterEnv(databaseUrl: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    DATABASE_URL: databaseUrl,
    HOST: '127.0.0.1',
    DATA_DIR: `/tmp/svc-cluster-${randomBytes(4).toString('hex')}`,
    // The key startTestServer derives for the same database: in-process and spawned instances on one
    // database share it, as every instance of one database must (a different key is refused at start).
    ENCRYPTION_KEY: testEncryptionKey(databaseUrl).toString('hex'),
    ALLOW_PRIVATE_TARGETS: '1',
    ...ONE_CLIENT_ADDRESS,
    // One issuer for every instance: tokens signed by one are verified by the others.
    PUBLIC_URL: 'http://cluster.test',
    LOG_LEVEL: process.env.CLUSTER_LOG_LEVEL ?? 'warn',
    ...extra,
  };
}

/** Starts `node --import tsx src/main.ts` and waits until /readyz answers 200. */
export async function startInstance(inst: Instance, env: Record<string, string>, timeoutMs = 240_000): Promise<void> {
  const portVar = inst.role !== 'worker' ? { PORT: String(inst.port) } : { OPS_PORT: String(inst.port), PORT: '0' };
  const proc = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: fileURLToPath(new URL('../..', import.meta.url)),
    env: { ...process.env, ...env, ...portVar, ROLE: inst.role },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  inst.proc = proc;
  const keep = (b: Buffer) => {
    inst.tail.push(...b.toString().split('\n').filter(Boolean));
    inst.tail.splice(0, Math.max(0, inst.tail.length - 30));
  };
  proc.stdout!.on('data', keep);
  proc.stderr!.on('data', keep);
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (proc.exitCode !== null)
      throw new Error(`${inst.role} on ${inst.port} exited ${proc.exitCode}: ${inst.tail.join('\n')}`);
    const ready = await fetch(`${inst.url}/readyz`).then(
      async (r) => ({ ok: r.status === 200, text: await r.text() }),
      (err) => ({ ok: false, text: String(err) }),
    );
    if (ready.ok) return;
    if (Date.now() > until)
      throw new Error(`${inst.role} on ${inst.port} not ready (${ready.text}): ${inst.tail.join('\n')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** SIGTERM and wait for the exit; resolves with the exit code. */
export function stopInstance(inst: Instance, timeoutMs = 40_000): Promise<number | null> {
  const proc = inst.proc;
  if (!proc || proc.exitCode !== null) return Promise.resolve(proc?.exitCode ?? null);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`${inst.role} on ${inst.port} did not stop: ${inst.tail.join('\n')}`));
    }, timeoutMs);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
    proc.kill('SIGTERM');
  });
}

export async function makeInstance(role: Instance['role']): Promise<Instance> {
  const port = await freePort();
  return { role, port, url: `http://127.0.0.1:${port}`, tail: [] };
}
