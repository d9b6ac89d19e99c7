import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CORE_LIMIT_GZ, sdkSize } from '../scripts/sdk-size.mjs';

// Issue 34's limit: the SDK core (the package's main entry) stays under 10 KB minified + gzip;
// the platform entries are measured apart (bench:sdk records all of them).
describe('sdk bundle size', () => {
  it(`core (index) under ${CORE_LIMIT_GZ / 1024} KB min+gzip; the platform entries bundle without Node built-ins`, async () => {
    const core = await sdkSize('index.ts');
    assert.ok(core.gz < CORE_LIMIT_GZ, `core: ${core.gz} bytes min+gzip`);
    for (const entry of ['browser.ts', 'react-native.ts']) {
      const s = await sdkSize(entry); // esbuild fails on a node: import without platform 'node'
      assert.ok(s.gz < CORE_LIMIT_GZ + 1024, `${entry}: ${s.gz} bytes`);
    }
  });
});
