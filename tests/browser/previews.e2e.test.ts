// The Previews tab of a git app, in Debian's chromium against the real control plane: the settings
// form saves every setting (the API shows them) and refuses an out-of-range sleep time next to its
// field; a preview made from a branch appears with its address; a sleeping preview shows as
// sleeping; removing one asks first and a dismissed confirmation removes nothing. Checked with axe.
// No preview is deployed for real here (its repository does not exist, so its deployment fails):
// what previews serve, sleep and wake is tests/edge/previews.e2e.test.ts.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { startTestServer, adminClient, type TestServer, type Client } from '../_support/server.js';
import { needChromium, launchChromium, withFailureShot, shot, CHROMIUM, axe } from '../_support/browser.js';
import { poll } from '../_support/wait.js';
import { nowIso } from '#lib/db/index.js';

const WAIT = { timeout: 60_000 };
const BASE = 'pv-page.test';
let s: TestServer | undefined;
let browser: Browser | undefined;
let page: Page;
let c: Client;

before(async () => {
  if (!existsSync(CHROMIUM)) return;
  s = await startTestServer({ SVC_BASE_DOMAIN: BASE });
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

/** The preview once its (failing) deployment has ended, so nothing changes its row afterwards. */
async function settled(appId: string, pid: string): Promise<any> {
  return poll(
    'the preview deployment ended',
    async () => {
      const p = (await c.req('GET', `/api/apps/${appId}/previews/${pid}`)).body.preview;
      return p && p.status !== 'deploying' && p.status !== 'created' ? p : null;
    },
    120_000,
    250,
  );
}

test('the Previews tab: settings saved and refused, a preview made from a branch, a sleeping one shown, removal confirmed', async (t) => {
  if (!(await needChromium(t))) return;
  const name = `pvp-${randomBytes(3).toString('hex')}`;
  const r = await c.req('POST', '/api/apps', {
    name,
    source: { type: 'git', repo_url: 'https://forge.example/team/app.git', branch: 'main' },
  });
  assert.equal(r.status, 201, r.text);
  const id = r.body.app.id as string;
  const settings = async () => (await c.req('GET', `/api/apps/${id}/previews/settings`)).body;
  await withFailureShot(page, 'previews-tab', async () => {
    await page.goto(`${s!.url}/apps/${encodeURIComponent(id)}`);
    await page.getByRole('tab', { name: 'Previews', exact: true }).click();
    await page.getByRole('heading', { name: 'Previews', exact: true }).waitFor(WAIT);
    await page.getByText('No previews.').waitFor(WAIT);
    await page.getByText('Previews are off').waitFor(WAIT);
    // The defaults as the form shows them: off, forks refused, previews sleep after 30 minutes.
    assert.equal(await page.getByLabel('Previews on').isChecked(), false);
    assert.equal(await page.getByLabel('Pull requests from forks').isChecked(), false);
    assert.equal(await page.getByLabel('Previews sleep after (minutes)').inputValue(), '30');
    await axe(page, 'previews tab: empty');

    await page.getByLabel('Previews on').check();
    await page.getByLabel('Time to live (hours)').fill('24');
    await page.getByLabel('Maximum previews').fill('3');
    await page.getByLabel('Inherited variables').fill('PUBLIC_URL, API_BASE');
    await page.getByLabel('Database').selectOption('none');
    await page.getByLabel('Previews sleep after (minutes)').fill('45');
    await page.getByRole('button', { name: 'Save preview settings' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor(WAIT);
    assert.deepEqual(await settings(), {
      enabled: true,
      from_forks: false,
      ttl_hours: 24,
      max: 3,
      inherit_env: ['API_BASE', 'PUBLIC_URL'],
      database: 'none',
      sleep_after_minutes: 45,
    });

    const sleepField = page.getByLabel('Previews sleep after (minutes)');
    await sleepField.fill('0');
    await page.getByRole('button', { name: 'Save preview settings' }).click();
    await poll(
      'the refusal next to the field',
      async () => (await sleepField.getAttribute('aria-invalid')) === 'true',
      30_000,
      100,
    );
    assert.equal((await settings()).sleep_after_minutes, 45, 'nothing saved');
    await axe(page, 'previews tab: a setting refused');
    await sleepField.fill('');
    await page.getByRole('button', { name: 'Save preview settings' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor(WAIT);
    assert.equal((await settings()).sleep_after_minutes, null, 'empty: previews never sleep');

    // Made from a branch in the page: listed with its number and address.
    await page.getByLabel('Branch').fill('feature/x');
    await page.getByRole('button', { name: 'Create preview' }).click();
    const host = `pr-1000-${name}.${BASE}`;
    await page.getByRole('link', { name: host }).waitFor(WAIT);
    assert.equal(await page.getByRole('link', { name: host }).getAttribute('href'), `https://${host}`);
    const list = (await c.req('GET', `/api/apps/${id}/previews`)).body.items;
    assert.deepEqual(
      list.map((p: any) => [p.number, p.branch]),
      [[1000, 'feature/x']],
    );

    // One made through the API, asleep as the idle check leaves a preview.
    const made = await c.req('POST', `/api/apps/${id}/previews`, { branch: 'fix', number: 12 });
    assert.equal(made.status, 202, made.text);
    await settled(id, made.body.preview.id);
    const child = await s!.env.db
      .selectFrom('previews')
      .select('target_app_id')
      .where('id', '=', made.body.preview.id)
      .executeTakeFirstOrThrow();
    await s!.env.db
      .updateTable('apps')
      .set({ status: 'sleeping', sleeping_at: nowIso(Date.now()) })
      .where('id', '=', child.target_app_id)
      .execute();
    assert.equal(
      (await c.req('GET', `/api/apps/${id}/previews/${made.body.preview.id}`)).body.preview.sleeping,
      true,
    );
    await page.reload();
    const row12 = page.getByTestId('preview-row').filter({ hasText: `pr-12-${name}` });
    await row12.locator('.badge-sleeping').waitFor(WAIT);
    assert.equal((await row12.locator('.badge-sleeping').textContent())?.trim(), 'sleeping');
    assert.equal(await page.getByTestId('preview-row').count(), 2);
    await axe(page, 'previews tab: two previews, one sleeping');
    await shot(page, 'app-tab-previews');

    // Removing asks first: dismissed, nothing goes; accepted, the preview and its row go.
    page.once('dialog', (d) => void d.dismiss());
    await page.getByRole('button', { name: 'Remove preview 12' }).click();
    await poll(
      'the dismissed confirmation',
      async () => (await c.req('GET', `/api/apps/${id}/previews`)).body.items.length === 2 || null,
      5_000,
      100,
    );
    assert.equal(await page.getByTestId('preview-row').count(), 2);
    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'Remove preview 12' }).click();
    await poll(
      'preview 12 removed in the page',
      async () => ((await page.getByTestId('preview-row').count()) === 1 ? true : null),
      60_000,
      100,
    );
    assert.deepEqual(
      (await c.req('GET', `/api/apps/${id}/previews`)).body.items.map((p: any) => p.number),
      [1000],
    );
    assert.equal(
      await s!.env.db
        .selectFrom('apps')
        .select('id')
        .where('id', '=', child.target_app_id)
        .executeTakeFirst(),
      undefined,
      "the preview's app row is gone",
    );
  });
});
