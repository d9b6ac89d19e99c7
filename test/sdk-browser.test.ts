import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { useCrossOriginRig } from './helpers/browser.js';
import { createTenant, deviceEvents, type ExportedEvent, type Tenant } from './helpers/client.js';
import { startSdkPage } from './helpers/sdk-page.js';

// The browser entry (@mobile-sdk-backend/sdk/browser, built) in Chromium, on its own origin,
// against the real service (CORS allows the page's origin); what arrived is read back through
// the export API.
let t: Tenant;

declare const sdk: import('../packages/sdk/src/index.js').Client;
declare const sdkReady: Promise<string>;

describe('sdk browser entry (Chromium)', () => {
  const rig = useCrossOriginRig(startSdkPage);
  before(async () => {
    t = await createTenant(rig.c);
  });

  async function open(): Promise<{ page: Page; anon: string }> {
    const ctx = await rig.browser.newContext();
    const page = await ctx.newPage();
    page.setDefaultTimeout(15_000);
    await page.goto(`${rig.site.url}/?key=${t.live.public_key}&api=${encodeURIComponent(rig.server.url)}`);
    const anon = await page.evaluate(() => sdkReady);
    return { page, anon };
  }

  /** The device's stored events in client_seq order, once `done` says they are all there (10 s at most). */
  async function stored(anon: string, done: (e: ExportedEvent[]) => boolean): Promise<ExportedEvent[]> {
    const end = Date.now() + 10_000;
    for (;;) {
      const mine = await deviceEvents(rig.c, t.live.public_key, anon);
      if (done(mine) || Date.now() > end) return mine;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  it('a page closed right after track() still delivers the event (pagehide flush, keepalive)', async () => {
    const { page, anon } = await open();
    await page.evaluate(() => void sdk.track('last_tap', { n: 1 }));
    // As a user closing the tab: the page's unload steps run (Playwright's default close skips them).
    await page.close({ runBeforeUnload: true });
    const events = await stored(anon, (e) => e.some((x) => x.event_name === 'last_tap'));
    assert.deepEqual(
      events.map((e) => e.event_name),
      ['app_open', 'session_start', 'last_tap', 'session_end'],
    );
    assert.equal(new Set(events.map((e) => e.context.session_id)).size, 1);
  });

  it('hidden then pagehide: one session_end and one flush; visible again: a new session', async () => {
    const { page, anon } = await open();
    const posts: number[] = [];
    page.on('request', (r) => r.url().endsWith('/api/v1/ingest/events') && r.method() === 'POST' && posts.push(1));
    // Chromium has no switch for a page's visibility: the events are dispatched as the browser would.
    await page.evaluate(`
      window.setVisibility = (v) => {
        Object.defineProperty(document, 'visibilityState', { value: v, configurable: true });
        document.dispatchEvent(new Event('visibilitychange', { bubbles: true }));
      };
      void sdk.track('before_hide');
      setVisibility('hidden');
      window.dispatchEvent(new PageTransitionEvent('pagehide', { persisted: true }));
    `);
    const hidden = await stored(anon, (e) => e.some((x) => x.event_name === 'session_end'));
    assert.deepEqual(
      hidden.map((e) => e.event_name),
      ['app_open', 'session_start', 'before_hide', 'session_end'],
    );
    await page.evaluate(`(async () => {
      setVisibility('visible');
      await sdk.track('back');
      await sdk.flush();
    })()`);
    const all = await stored(anon, (e) => e.some((x) => x.event_name === 'back'));
    assert.deepEqual(all.map((e) => e.event_name).slice(4), ['session_start', 'back']);
    assert.notEqual(all[4].context.session_id, all[3].context.session_id);
    assert.equal(posts.length, 2, 'one upload when hidden (the pagehide after it changed nothing), one for the rest');
    await page.close();
  });

  it('a large queue leaves in keepalive batches under 60 KB', async () => {
    const { page, anon } = await open();
    const sizes: number[] = [];
    page.on('request', (r) => {
      if (r.url().endsWith('/api/v1/ingest/events')) sizes.push(Buffer.byteLength(r.postData() ?? ''));
    });
    await page.evaluate(async () => {
      const text = 'x'.repeat(2000);
      for (let i = 0; i < 100; i++) await sdk.track('big', { i, text });
      await sdk.setForeground(false);
    });
    const events = await stored(anon, (e) => e.filter((x) => x.event_name === 'big').length === 100);
    assert.equal(events.filter((e) => e.event_name === 'big').length, 100);
    assert.ok(sizes.length >= 4, `${sizes.length} uploads`);
    for (const s of sizes) assert.ok(s < 60_000, `a batch of ${s} bytes`);
    await page.close();
  });
});
