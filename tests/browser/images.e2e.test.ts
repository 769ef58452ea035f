// Images in the dashboard, in Debian's chromium against the real control plane and a real private
// registry (docker-registry with bcrypt htpasswd on loopback): the Registries page adds credentials
// (through the step-up dialog), tests them against the registry's /v2/ and deletes them, never
// showing the password; the app's Source tab saves a new image and pull policy, makes a deploy hook
// whose URL is shown once (and regenerated), and "Pull and redeploy" starts a deployment whose live
// log shows its pull lines. Checked with axe.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { startTestServer, adminClient, ADMIN, type TestServer, type Client } from '../_support/server.js';
import { needChromium, launchChromium, withFailureShot, CHROMIUM, axe } from '../_support/browser.js';
import { needDocker } from '../_support/docker.js';
import { needRegistry, startRegistry, type TestRegistry } from '../_support/registry.js';

const WAIT = { timeout: 60_000 };
let s: TestServer | undefined;
let browser: Browser | undefined;
let page: Page;
let c: Client;
let reg: TestRegistry | null = null;

before(async () => {
  if (!existsSync(CHROMIUM)) return;
  s = await startTestServer();
  c = await adminClient(s);
  browser = await launchChromium();
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.addCookies([...c.cookies].map(([name, value]) => ({ name, value, url: s!.url })));
  page = await context.newPage();
  page.on('dialog', (d) => void d.accept());
});

after(async () => {
  await browser?.close();
  await reg?.stop();
  await s?.stop();
});

/** Answers the step-up dialog with the password when it opens. */
async function answerStepUp(): Promise<void> {
  const dialog = page.getByRole('dialog', { name: 'Confirm it is you' });
  await dialog.waitFor(WAIT);
  await dialog.getByLabel('Password').fill(ADMIN.password);
  await dialog.getByRole('button', { name: 'Verify' }).click();
  await dialog.waitFor({ state: 'hidden', ...WAIT });
}

test('the Registries page adds credentials after a step-up, tests them against /v2/ and deletes them', async (t) => {
  if (!(await needChromium(t)) || !(await needRegistry(t))) return;
  reg = await startRegistry();
  await withFailureShot(page, 'registries', async () => {
    await page.goto(`${s!.url}/registries`);
    await page.getByRole('heading', { name: 'Registries' }).waitFor(WAIT);
    await page.getByLabel('Registry host').fill(reg!.host);
    await page.getByLabel('Username').fill(reg!.username);
    await page.getByLabel('Password or token').fill(reg!.password);
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    await answerStepUp();
    const row = page.getByTestId('registry').filter({ hasText: reg!.host });
    await row.waitFor(WAIT);
    assert.equal((await page.content()).includes(reg!.password), false);
    await row.getByRole('button', { name: /^Test/ }).click();
    await page.getByTestId('registry-test').filter({ hasText: 'Logged in.' }).waitFor(WAIT);
    await axe(page, 'registries page');
    await row.getByRole('button', { name: /^Delete/ }).click();
    await row.waitFor({ state: 'detached', ...WAIT });
    assert.deepEqual((await c.req('GET', '/api/registries')).body.items, []);
  });
});

test('the Source tab saves an image and its pull policy, makes a deploy hook shown once, and pulls and redeploys with pull lines in the live log', async (t) => {
  if (!(await needChromium(t)) || !(await needRegistry(t)) || !(await needDocker(t))) return;
  reg ??= await startRegistry();
  const r = await c.req('POST', '/api/apps', {
    name: 'source-page',
    source: { type: 'image', image: `${reg.host}/team/none:1` },
  });
  assert.equal(r.status, 201, r.text);
  const id = r.body.app.id as string;
  await withFailureShot(page, 'source-tab', async () => {
    await page.goto(`${s!.url}/apps/${encodeURIComponent(id)}?tab=source`);
    const image = page.getByLabel('Image');
    await image.waitFor(WAIT);
    await image.fill(`${reg!.host}/team/none:2`);
    await page.getByLabel('Pull policy').selectOption('always');
    await page.getByRole('button', { name: 'Save source' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor(WAIT);
    const saved = (await c.req('GET', `/api/apps/${id}`)).body.app.source;
    assert.deepEqual(saved, { type: 'image', image: `${reg!.host}/team/none:2`, pull: 'always' });

    await page.getByRole('button', { name: 'Make deploy hook' }).click();
    const url = page.getByLabel('Copy it now: it is not shown again');
    const stepped = await Promise.race([
      url.waitFor(WAIT).then(() => false),
      page
        .getByRole('dialog', { name: 'Confirm it is you' })
        .waitFor(WAIT)
        .then(() => true),
    ]);
    if (stepped) await answerStepUp();
    await url.waitFor(WAIT);
    const first = await url.inputValue();
    assert.match(first, /\/hooks\/deploy\/[A-Za-z0-9_-]{43}$/);
    await page.getByTestId('hook-state').filter({ hasText: 'Made' }).waitFor(WAIT);
    await page.getByRole('button', { name: 'Regenerate' }).click();
    await page.waitForFunction(
      (old) => (document.getElementById('hook-url') as HTMLInputElement | null)?.value !== old,
      first,
      WAIT,
    );
    assert.equal((await fetch(first.replace(/^https?:\/\/[^/]+/, s!.url), { method: 'POST' })).status, 404);
    await axe(page, 'app page: source tab');

    await page.getByRole('button', { name: 'Pull and redeploy' }).click();
    // The overview opens on the new deployment; its live log shows the pull lines as they come.
    await page.locator('.logline.log-pull').first().waitFor(WAIT);
    const text = await page.locator('.logline.log-pull').first().textContent();
    assert.match(text ?? '', new RegExp(`pulling ${reg!.host}/team/none:2`));
    const deps = (await c.req('GET', `/api/apps/${id}/deployments`)).body.items;
    assert.equal(deps[0].pull, true);
  });
});
