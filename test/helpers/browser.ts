import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { after, afterEach, before } from 'node:test';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';
import { ensureConsoleBuilt } from '../../console/scripts/build.mjs';
import { client, type Client } from './client.js';
import { startTestServer, type TestServer } from './server.js';

/** Debian's Chromium (.ci/run installs it when missing); playwright-core brings no browser. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SHOTS = path.resolve('docs/console');

export interface ConsoleRig {
  server: TestServer;
  c: Client;
  browser: Browser;
  /**
   * A new browser context (a new user's storage) watched for CSP violations: the file's tests fail
   * on any. Make contexts with this, not `browser.newContext`.
   */
  newContext(options?: BrowserContextOptions): Promise<BrowserContext>;
  /** A new page (own storage, as a new browser tab of a new user) at the console's URL + `to`. */
  open(to?: string, options?: BrowserContextOptions): Promise<Page>;
}

/** A site serving a test page from its own origin. */
export interface Site {
  url: string;
  close(): Promise<void>;
}

export interface CrossOriginRig {
  site: Site;
  /** The service, allowing the site's origin (CORS_ORIGINS). */
  server: TestServer;
  c: Client;
  browser: Browser;
}

/**
 * The rig of the SDK's browser tests: a page the site serves on its own origin, the real service
 * allowing that origin, and a Chromium; started before the suite's tests and stopped after them.
 */
export function useCrossOriginRig(startSite: () => Promise<Site>): CrossOriginRig {
  const rig = {} as CrossOriginRig;
  before(async () => {
    rig.site = await startSite();
    [rig.server, rig.browser] = await Promise.all([
      startTestServer({ CORS_ORIGINS: rig.site.url }),
      chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] }),
    ]);
    rig.c = client(rig.server.url);
  });
  after(async () => {
    await rig.browser?.close();
    await rig.server?.stop();
    await rig.site?.close();
  });
  return rig;
}

/**
 * Reports every Content-Security-Policy violation of the context's pages to `found`: Chromium's
 * own console error ("… violates the following Content Security Policy directive …") and a
 * `securitypolicyviolation` listener added to every document before its scripts run (it also sees
 * what the console message may word differently, e.g. a blocked style attribute).
 */
export async function watchCsp(ctx: BrowserContext, found: string[]) {
  await ctx.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) =>
      console.error(`CSP violation: ${e.violatedDirective} blocked ${e.blockedURI || 'inline'} in ${e.sourceFile}`),
    );
  });
  ctx.on('console', (msg) => {
    const text = msg.text();
    if (msg.type() === 'error' && /Content Security Policy|CSP violation/i.test(text)) {
      found.push(`${msg.location().url}: ${text}`);
    }
  });
}

/**
 * A browser test's set-up: the console built when missing or stale, a service on a fresh
 * database, and one Chromium for the file; all stopped after the file's tests.
 */
export function useConsole(env: Record<string, string> = {}): ConsoleRig {
  const rig = {} as ConsoleRig;
  const violations: string[] = [];
  // Every test (and the file) fails on a CSP violation seen during it: the console runs under the
  // service's real policy, so a blocked script or style is a bug, not noise.
  const noViolations = () => assert.deepEqual(violations.splice(0), [], 'Content Security Policy violations');
  afterEach(noViolations);
  before(async () => {
    ensureConsoleBuilt(() => undefined);
    [rig.server, rig.browser] = await Promise.all([
      startTestServer(env),
      chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] }),
    ]);
    rig.c = client(rig.server.url);
    rig.newContext = async (options) => {
      const ctx = await rig.browser.newContext({ viewport: { width: 1280, height: 900 }, ...options });
      await watchCsp(ctx, violations);
      return ctx;
    };
    rig.open = async (to = '/', options = {}) => {
      const ctx = await rig.newContext(options);
      await ctx.grantPermissions(['clipboard-read', 'clipboard-write']);
      const page = await ctx.newPage();
      page.setDefaultTimeout(15_000);
      await page.goto(`${rig.server.url}/console${to}`);
      return page;
    };
  });
  after(async () => {
    await rig.browser?.close();
    await rig.server?.stop();
    noViolations();
  });
  return rig;
}

/** A full-page screenshot for the docs: docs/console/<name>.png (shown in console/README.md). */
export async function screenshot(page: Page, name: string) {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
}
