import { readFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

const DIST = path.resolve('packages/sdk/dist');

/**
 * A static origin for the SDK's browser tests: `/` is a page that loads the built browser entry
 * (`/sdk/browser.js`, packages/sdk/dist as `npm run build` leaves it) and creates `window.sdk`
 * with the query's `key` and `api` (the service, another origin); `/sdk/*` serves dist/.
 */
export async function startSdkPage(): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      return res.end(PAGE);
    }
    const file = path.join(DIST, path.normalize(url.pathname.replace(/^\/sdk\//, '')));
    if (!url.pathname.startsWith('/sdk/') || !file.startsWith(DIST)) return res.writeHead(404).end();
    try {
      const body = await readFile(file);
      res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const PAGE = `<!doctype html><title>sdk</title><script type="module">
import { createBrowserClient } from '/sdk/browser.js';
const q = new URLSearchParams(location.search);
window.sdk = createBrowserClient({
  apiKey: q.get('key'),
  baseUrl: q.get('api'),
  device: { platform: 'ios', os: '17.4', appVersion: '3.1.0', locale: 'en_US', country: 'US' },
  stream: false,
});
window.sdkReady = window.sdk.start().then(() => window.sdk.getAnonId());
</script>`;
