// `npm start`: compile when dist/ is missing or older than any source file (the server's and the
// console's), then run the service.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureSdkBuilt } from './build-sdk.mjs';
import { ensureServerBuilt } from './build-server.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

ensureSdkBuilt();
ensureServerBuilt();
// The web console served at /console (console/scripts/build.mjs: same missing-or-stale rule).
const { ensureConsoleBuilt } = await import('../console/scripts/build.mjs');
ensureConsoleBuilt();
await import(path.join(root, 'dist', 'main.js'));
