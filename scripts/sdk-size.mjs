// The SDK's bundle sizes, as an app's bundler would ship them: esbuild, ESM, es2020, minified,
// then gzip -9. `node scripts/sdk-size.mjs` prints the core (index) and each platform entry.
// Used by bench/sdk.ts and test/sdk-size.test.ts (the core stays under 10 KB).
import { build } from 'esbuild';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

export const SDK_SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'packages', 'sdk', 'src');
export const CORE_LIMIT_GZ = 10 * 1024;
export const ENTRIES = ['index.ts', 'browser.ts', 'react-native.ts', 'rules.ts', 'paywalls.ts'];
export const REACT_SRC = path.resolve(SDK_SRC, '..', '..', 'react', 'src');

/** { min, gz } bytes of one entry bundled with what it imports. */
export async function sdkSize(entry, src = SDK_SRC, external = []) {
  const r = await build({
    external,
    entryPoints: [path.join(src, entry)],
    bundle: true,
    minify: true,
    format: 'esm',
    target: 'es2020',
    write: false,
    logLevel: 'silent',
  });
  const b = r.outputFiles[0].contents;
  return { min: b.length, gz: gzipSync(b, { level: 9 }).length };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const e of ENTRIES) {
    const s = await sdkSize(e);
    console.log(`${e.padEnd(16)} ${(s.gz / 1024).toFixed(2)} KB min+gzip (${(s.min / 1024).toFixed(1)} KB minified)`);
  }
  for (const [label, s] of Object.entries(await reactSizes()))
    console.log(
      `${label.padEnd(16)} ${(s.gz / 1024).toFixed(2)} KB min+gzip (${(s.min / 1024).toFixed(1)} KB minified)`,
    );
}

/**
 * @mobile-sdk-backend/react: its own code (react and the SDK left to the app, as peer dependencies),
 * and with the SDK code it bundles (the paywall module; the core is imported for its types only; react still left out).
 */
export async function reactSizes() {
  return {
    'react (own)': await sdkSize('index.ts', REACT_SRC, [
      'react',
      '@mobile-sdk-backend/sdk',
      '@mobile-sdk-backend/sdk/*',
    ]),
    'react + paywalls': await sdkSize('index.ts', REACT_SRC, ['react']),
  };
}
