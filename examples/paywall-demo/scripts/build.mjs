// Builds the example app (examples/paywall-demo/dist) with the repository's Vite when it is missing
// or older than its sources. Used by `npm run demo` (scripts/demo.ts) and test/example-app.test.ts.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const exampleDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const exampleDist = path.join(exampleDir, 'dist');
const SOURCES = ['src', 'index.html', 'vite.config.ts', 'package.json'];
// The SDK and bindings it bundles: a rebuilt package rebuilds the app.
const PACKAGES = ['../../packages/sdk/dist', '../../packages/react/dist'];

function newest(p) {
  if (!existsSync(p)) return 0;
  const s = statSync(p);
  if (!s.isDirectory()) return s.mtimeMs;
  return readdirSync(p).reduce((t, e) => Math.max(t, newest(path.join(p, e))), s.mtimeMs);
}

export function exampleIsStale() {
  const built = path.join(exampleDist, 'index.html');
  const inputs = [...SOURCES, ...PACKAGES].map((s) => newest(path.join(exampleDir, s)));
  return !existsSync(built) || statSync(built).mtimeMs < Math.max(...inputs);
}

/** Builds into a private directory, then swaps it in: two processes building at once never mix files. */
export function ensureExampleBuilt(log = console.log) {
  if (!exampleIsStale()) return false;
  log('building examples/paywall-demo…');
  const vite = path.join(
    path.dirname(createRequire(path.join(exampleDir, 'package.json')).resolve('vite/package.json')),
    'bin',
    'vite.js',
  );
  const tmp = path.join(exampleDir, `dist-${process.pid}`);
  execFileSync(process.execPath, [vite, 'build', '--logLevel', 'warn', '--outDir', tmp, '--emptyOutDir'], {
    cwd: exampleDir,
    stdio: 'inherit',
  });
  rmSync(exampleDist, { recursive: true, force: true });
  try {
    renameSync(tmp, exampleDist);
  } catch {
    rmSync(tmp, { recursive: true, force: true }); // another process swapped in the same build first
  }
  return true;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) ensureExampleBuilt();
