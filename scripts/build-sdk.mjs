// The service imports the SDK's rule language (`@mobile-sdk-backend/sdk/rules`, its dist/).
// `npm ci` builds it (the package's `prepare` script); this rebuilds it when its source changed since.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const sdk = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'packages', 'sdk');

export function ensureSdkBuilt() {
  const src = path.join(sdk, 'src');
  const newest = Math.max(...readdirSync(src).map((f) => statSync(path.join(src, f)).mtimeMs));
  const built = path.join(sdk, 'dist', 'index.js');
  if (existsSync(built) && statSync(built).mtimeMs >= newest) return;
  console.log('building packages/sdk…');
  execFileSync(
    process.execPath,
    [path.join(sdk, '..', '..', 'node_modules', 'typescript', 'bin', 'tsc'), '-p', path.join(sdk, 'tsconfig.json')],
    { stdio: 'inherit' },
  );
}
