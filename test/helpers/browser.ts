import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { after, before } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
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
  /** A new page (own storage, as a new browser tab of a new user) at the console's URL + `to`. */
  open(to?: string): Promise<Page>;
}

/**
 * A browser test's set-up: the console built when missing or stale, a service on a fresh
 * database, and one Chromium for the file; all stopped after the file's tests.
 */
export function useConsole(env: Record<string, string> = {}): ConsoleRig {
  const rig = {} as ConsoleRig;
  before(async () => {
    ensureConsoleBuilt(() => undefined);
    [rig.server, rig.browser] = await Promise.all([
      startTestServer(env),
      chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] }),
    ]);
    rig.c = client(rig.server.url);
    rig.open = async (to = '/') => {
      const ctx = await rig.browser.newContext({ viewport: { width: 1280, height: 900 } });
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
  });
  return rig;
}

/** A full-page screenshot for the docs: docs/console/<name>.png (shown in console/README.md). */
export async function screenshot(page: Page, name: string) {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
}
