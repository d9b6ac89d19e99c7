// `npm start`: compile when dist/ is missing or older than any source file (the server's and the
// console's), then run the service.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureSdkBuilt } from './build-sdk.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const entry = path.join(root, 'dist', 'main.js');

function newest(dir) {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }
  return t;
}

ensureSdkBuilt();
if (!existsSync(entry) || statSync(entry).mtimeMs < newest(path.join(root, 'src'))) {
  console.log('building…');
  execFileSync(
    process.execPath,
    [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', path.join(root, 'tsconfig.json')],
    { stdio: 'inherit' },
  );
}
// The web console served at /console (console/scripts/build.mjs: same missing-or-stale rule).
const { ensureConsoleBuilt } = await import('../console/scripts/build.mjs');
ensureConsoleBuilt();
await import(entry);
