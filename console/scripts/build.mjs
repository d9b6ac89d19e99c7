// Builds the console (console/dist) when it is missing or older than its sources. Used by
// `npm start` (scripts/start.mjs) and the browser tests (test/helpers/browser.ts), so a fresh
// clone needs nothing but `npm ci`.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(dir, 'dist');
const SOURCES = ['src', 'index.html', 'vite.config.ts', 'package.json'];

function newest(p) {
  const s = statSync(p);
  if (!s.isDirectory()) return s.mtimeMs;
  return readdirSync(p).reduce((t, e) => Math.max(t, newest(path.join(p, e))), s.mtimeMs);
}

export function consoleIsStale() {
  const built = path.join(dist, 'index.html');
  return !existsSync(built) || statSync(built).mtimeMs < Math.max(...SOURCES.map((s) => newest(path.join(dir, s))));
}

/** Builds into a private directory, then swaps it in: two processes building at once never mix files. */
export function ensureConsoleBuilt(log = console.log) {
  if (!consoleIsStale()) return false;
  log('building the console…');
  const vite = path.join(
    path.dirname(createRequire(path.join(dir, 'package.json')).resolve('vite/package.json')),
    'bin',
    'vite.js',
  );
  const tmp = path.join(dir, `dist-${process.pid}`);
  execFileSync(process.execPath, [vite, 'build', '--logLevel', 'warn', '--outDir', tmp, '--emptyOutDir'], {
    cwd: dir,
    stdio: 'inherit',
  });
  rmSync(dist, { recursive: true, force: true });
  try {
    renameSync(tmp, dist);
  } catch {
    rmSync(tmp, { recursive: true, force: true }); // another process swapped in the same build first
  }
  return true;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) ensureConsoleBuilt();
