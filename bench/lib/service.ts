import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const root = path.resolve(import.meta.dirname, '..', '..');

/** CPU time (ms) of the exited children a process has waited for. */
function reapedCpuMs(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[13]) + Number(f[14])) * (1000 / 100);
}

/** CPU time (user + system, ms) a process has used so far: per-request cost that the machine's load does not distort much. */
export function cpuMs(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) * (1000 / 100);
}

/**
 * CPU time (ms) of a process's descendants (e.g. the embedded PostgreSQL's postmaster and backends),
 * itself excluded, with what their own exited children used (a backend whose connection closed).
 */
export function descendantsCpuMs(pid: number): number {
  const procs = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  const children = new Map<number, number[]>();
  for (const d of procs) {
    try {
      const f = readFileSync(`/proc/${d}/stat`, 'utf8').split(') ')[1].split(' ');
      const ppid = Number(f[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(d)]);
    } catch {
      /* exited meanwhile */
    }
  }
  let total = 0;
  const stack = [...(children.get(pid) ?? [])];
  while (stack.length) {
    const p = stack.pop()!;
    try {
      total += cpuMs(p) + reapedCpuMs(p);
    } catch {
      /* exited meanwhile */
    }
    stack.push(...(children.get(p) ?? []));
  }
  return total;
}

export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

async function waitFor(url: string, child: ChildProcess, ms = 90_000): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`process exited early (${child.exitCode})`);
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      /* not up yet */
    }
    await sleep(200);
  }
  throw new Error(`${url} did not come up`);
}

/** Where a process may run: a CPU list for taskset (e.g. "1"), to keep servers and load generator apart. */
export interface Placement {
  cpus?: string;
}

/** The command line for node with these arguments, pinned to `cpus` when given (Linux taskset). */
export function nodeCommand(args: string[], { cpus }: Placement): [string, string[]] {
  return cpus ? ['taskset', ['-c', cpus, process.execPath, ...args]] : [process.execPath, args];
}

/**
 * Pins the calling process to `cpus` and answers the CPU list for the servers it starts, when the
 * machine has taskset and at least two cores: the load generator and the servers then never share
 * a core, which steadies per-request CPU figures. Undefined (no pinning) otherwise.
 */
export function splitCores(): Placement {
  try {
    // Read before pinning: it counts the cores this process may use.
    const cores = availableParallelism();
    if (cores < 2) return {};
    execFileSync('taskset', ['-cp', '0', String(process.pid)], { stdio: 'ignore' });
    return { cpus: cores === 2 ? '1' : `1-${cores - 1}` };
  } catch {
    return {};
  }
}

/** Runs the real service (embedded Postgres under a temp DATA_DIR) in its own process. */
export async function spawnService(env: Record<string, string> = {}, placement: Placement = {}) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'svc-bench-'));
  const port = await freePort();
  const pgPort = await freePort();
  // The compiled service (scripts/start.mjs builds when stale), as `npm start` runs it: tsx would add ~130 MB of RSS.
  const [cmd, args] = nodeCommand([path.join(root, 'scripts/start.mjs')], placement);
  const child = spawn(cmd, args, {
    cwd: root,
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      EMBEDDED_PG_PORT: String(pgPort),
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(`${url}/api/v1/ingest/health`, child);
  return {
    url,
    pid: child.pid!,
    /** The embedded database, for benches that check the service's own state (see src/db/embedded.ts). */
    databaseUrl: `postgres://postgres:postgres@127.0.0.1:${pgPort}/app`,
    async stop() {
      await new Promise((r) => {
        child.once('exit', r);
        child.kill('SIGTERM');
      });
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Runs a bench-only script (e.g. a bare Fastify baseline) in its own process and waits for its port:
 * TypeScript through tsx, plain JavaScript (.mjs) by node itself.
 */
export async function spawnScript(
  file: string,
  readyPath: string,
  env: Record<string, string> = {},
  placement: Placement = {},
) {
  const port = await freePort();
  const [cmd, args] = nodeCommand(file.endsWith('.mjs') ? [file] : ['--import', 'tsx', file], placement);
  const child = spawn(cmd, args, {
    cwd: root,
    env: { ...process.env, PORT: String(port), ...env },
    stdio: 'inherit',
  });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(url + readyPath, child);
  return { url, pid: child.pid!, stop: () => new Promise((r) => (child.once('exit', r), child.kill('SIGTERM'))) };
}
