import { build } from 'esbuild';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

/**
 * A static origin for the React bindings' browser test: `/` is a page whose `/app.js` (bundled here
 * with esbuild from the built packages, as an app's bundler would) renders a component using
 * `useFlag` and `useExperiment` with a browser client made from the query's `key` and `api`.
 */
export async function startReactPage(): Promise<{ url: string; close(): Promise<void> }> {
  const out = await build({
    stdin: { contents: APP, resolveDir: path.resolve('test'), loader: 'js' },
    bundle: true,
    format: 'esm',
    target: 'es2020',
    write: false,
    logLevel: 'silent',
    define: { 'process.env.NODE_ENV': '"production"' },
  });
  const js = out.outputFiles[0].contents;
  const server = http.createServer((req, res) => {
    const p = new URL(req.url ?? '/', 'http://x').pathname;
    if (p === '/') return res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
    if (p === '/app.js') return res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(js);
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const PAGE = '<!doctype html><title>react</title><div id="root"></div><script type="module" src="/app.js"></script>';

const APP = `
import { createElement as h } from 'react';
import { createRoot } from 'react-dom/client';
import { createBrowserClient } from '@mobile-sdk-backend/sdk/browser';
import { SdkProvider, useExperiment, useFlag } from '@mobile-sdk-backend/react';
const q = new URLSearchParams(location.search);
const client = createBrowserClient({
  apiKey: q.get('key'),
  baseUrl: q.get('api'),
  device: { platform: 'ios', os: '17.4', appVersion: '3.1.0', locale: 'en_US', country: 'US' },
  lifecycle: false,
});
function Checkout() {
  const flag = useFlag('new_checkout');
  const exp = useExperiment('layout_test', 'none');
  return h('p', { id: 'out' }, 'flag:' + flag + ' exp:' + exp.variant + '/' + exp.value);
}
createRoot(document.getElementById('root')).render(h(SdkProvider, { client }, h(Checkout)));
window.sdk = client;
window.sdkReady = client.start().then(() => client.getAnonId());
`;
