// The service's compiled dist/: built when missing or older than any file under src/ (`npm start`,
// and benches that load dist/ directly).
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function newest(dir) {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }
  return t;
}

/** Compiles the service unless dist/main.js is newer than every source file. */
export function ensureServerBuilt() {
  const entry = path.join(root, 'dist', 'main.js');
  if (existsSync(entry) && statSync(entry).mtimeMs >= newest(path.join(root, 'src'))) return;
  console.log('building…');
  execFileSync(
    process.execPath,
    [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', path.join(root, 'tsconfig.json')],
    { stdio: 'inherit' },
  );
}
