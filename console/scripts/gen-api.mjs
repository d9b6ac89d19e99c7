// Regenerates console/src/api/schema.d.ts from the service's OpenAPI document:
//   node console/scripts/gen-api.mjs [openapi.json]
// Without a file, `npm run openapi` writes the document first (the service on a throwaway database).
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const root = path.resolve(dir, '..');
const given = process.argv[2];
const doc = given ? path.resolve(given) : path.join(os.tmpdir(), `openapi-${process.pid}.json`);
if (!given)
  execFileSync(process.execPath, ['--import', 'tsx', path.join(root, 'scripts/openapi.mjs'), doc], {
    cwd: root,
    stdio: 'inherit',
  });
execFileSync(
  path.join(dir, 'node_modules/.bin/openapi-typescript'),
  [doc, '-o', path.join(dir, 'src/api/schema.d.ts')],
  { stdio: 'inherit' },
);
if (!given) rmSync(doc);
