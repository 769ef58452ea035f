// The sleep setting on the app page, in Debian's chromium against the real control plane: the
// overview tab saves a number of minutes (the API shows it), refuses an out-of-range value next to
// its field with the API's words, turns it off with an empty field; a sleeping app shows the
// `sleeping` badge. Checked with axe.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { startTestServer, adminClient, type TestServer, type Client } from '../_support/server.js';
import { needChromium, launchChromium, withFailureShot, CHROMIUM, axe } from '../_support/browser.js';
import { poll } from '../_support/wait.js';
import { setSleeping } from '#lib/apps/store.js';

const WAIT = { timeout: 60_000 };
let s: TestServer | undefined;
let browser: Browser | undefined;
let page: Page;
let c: Client;

before(async () => {
  if (!existsSync(CHROMIUM)) return;
  s = await startTestServer();
  c = await adminClient(s);
  browser = await launchChromium();
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.addCookies([...c.cookies].map(([name, value]) => ({ name, value, url: s!.url })));
  page = await context.newPage();
});

after(async () => {
  await browser?.close();
  await s?.stop();
});

const apiApp = async (id: string) => (await c.req('GET', `/api/apps/${id}`)).body.app;

test('the app page sets, refuses and turns off sleep_after_minutes, and shows a sleeping app as sleeping', async (t) => {
  if (!(await needChromium(t))) return;
  const r = await c.req('POST', '/api/apps', {
    name: 'sleepy-page',
    source: { type: 'image', image: 'svc-test/none:1' },
  });
  assert.equal(r.status, 201, r.text);
  const id = r.body.app.id as string;
  await withFailureShot(page, 'sleep-setting', async () => {
    await page.goto(`${s!.url}/apps/${encodeURIComponent(id)}`);
    const input = page.getByLabel('Sleep after (minutes)');
    await input.waitFor(WAIT);
    assert.equal(await input.inputValue(), '');
    await input.fill('15');
    await page.getByRole('button', { name: 'Save sleep setting' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor(WAIT);
    assert.equal((await apiApp(id)).sleep_after_minutes, 15);

    await input.fill('20000');
    await page.getByRole('button', { name: 'Save sleep setting' }).click();
    await poll(
      'the refusal next to the field',
      async () => (await input.getAttribute('aria-invalid')) === 'true',
      30_000,
      100,
    );
    assert.equal((await apiApp(id)).sleep_after_minutes, 15, 'nothing saved');
    await axe(page, 'app page: sleep setting refused');

    await input.fill('');
    await page.getByRole('button', { name: 'Save sleep setting' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor(WAIT);
    assert.equal((await apiApp(id)).sleep_after_minutes, null);

    // Asleep as the idle check leaves it (no engine needed for the badge).
    await c.req('PATCH', `/api/apps/${id}`, { sleep_after_minutes: 5 });
    await setSleeping(s!.env.db, id, Date.now());
    assert.equal((await apiApp(id)).status, 'sleeping');
    await page.reload();
    await page.locator('.badge-sleeping').first().waitFor(WAIT);
    assert.equal((await page.locator('.badge-sleeping').first().textContent())?.trim(), 'sleeping');
    await axe(page, 'app page: a sleeping app');
  });
});
