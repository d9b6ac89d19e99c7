// The service imports the SDK's rule language (`@mobile-sdk-backend/sdk/rules`, its dist/), and the
// React bindings' tests import `@mobile-sdk-backend/react` (its dist/). `npm ci` builds both (the
// packages' `prepare` scripts); this rebuilds each when its source changed since.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function ensureBuilt(name, after = 0) {
  const pkg = path.join(root, 'packages', name);
  const src = path.join(pkg, 'src');
  const newest = Math.max(after, ...readdirSync(src).map((f) => statSync(path.join(src, f)).mtimeMs));
  const built = path.join(pkg, 'dist', 'index.js');
  if (existsSync(built) && statSync(built).mtimeMs >= newest) return statSync(built).mtimeMs;
  console.log(`building packages/${name}…`);
  execFileSync(
    process.execPath,
    [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', path.join(pkg, 'tsconfig.json')],
    { stdio: 'inherit' },
  );
  return Date.now();
}

export function ensureSdkBuilt() {
  // The bindings compile against the SDK's declarations: rebuilt after a newer SDK build too.
  ensureBuilt('react', ensureBuilt('sdk'));
}
