// The token form in Debian's chromium against the real control plane: scopes and apps picked by
// checkbox, the token made after a step-up, its scopes, apps and last use shown in the list and
// true over HTTP; a viewer who asks for more than it holds sees the API's refusal. axe on each view.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startTestServer, adminClient, ADMIN, type TestServer, type Client } from '../_support/server.js';
import { needChromium, launchChromium, shot, withFailureShot, CHROMIUM, axe } from '../_support/browser.js';
import { insertUser } from '#lib/auth/users-store.js';
import { hashPassword } from '#lib/auth/passwords.js';

const WAIT = { timeout: 60_000 };
const VIEWER = { username: 'vic', password: 'a viewer with a long password' };

let s: TestServer | undefined;
let admin: Client;
let appId: string;
let browser: Browser | undefined;
let context: BrowserContext;
let page: Page;

before(async () => {
  if (!existsSync(CHROMIUM)) return;
  s = await startTestServer();
  admin = await adminClient(s);
  const app = await admin.req('POST', '/api/apps', {
    name: 'picked-app',
    source: { type: 'image', image: 'nginx:1.27' },
  });
  assert.equal(app.status, 201, app.text);
  await admin.req('POST', '/api/apps', { name: 'other-app', source: { type: 'image', image: 'nginx:1.27' } });
  appId = ((await admin.req('GET', '/api/apps')).body.items as Array<{ id: string; name: string }>).find(
    (a) => a.name === 'picked-app',
  )!.id;
  await insertUser(s.env.db, VIEWER.username, await hashPassword(VIEWER.password, 14), { role: 'viewer' });
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  page = await context.newPage();
});

after(async () => {
  await browser?.close();
  await s?.stop();
});

async function signIn(who: { username: string; password: string }): Promise<void> {
  await page.goto(s!.url + '/');
  await page.getByLabel('Username').fill(who.username);
  await page.getByLabel('Password').fill(who.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor(WAIT);
  await page.getByRole('link', { name: 'Tokens' }).click();
  await page.getByRole('heading', { level: 1, name: 'API tokens' }).waitFor(WAIT);
}

async function stepUp(password: string): Promise<void> {
  const dialog = page.getByRole('dialog', { name: 'Confirm it is you' });
  await dialog.waitFor(WAIT);
  await dialog.getByLabel('Password').fill(password);
  await dialog.getByRole('button', { name: 'Verify' }).click();
}

test('owner: a token limited to one scope and one app; the list shows both, and its last use once used', async (t) => {
  if (!(await needChromium(t))) return;
  await withFailureShot(page, 'tokens-scoped', async () => {
    await signIn(ADMIN);
    const scopes = page.getByRole('group', { name: 'Scopes' });
    await scopes.getByRole('checkbox').first().waitFor(WAIT);
    // An owner holds every permission: each one is offered.
    assert.equal(await scopes.getByRole('checkbox').count(), 14); // every permission an owner holds, self.* included
    await axe(page, 'tokens form');
    await page.getByLabel('Name', { exact: true }).fill('reader-bot');
    await scopes.getByRole('checkbox', { name: /app\.read/ }).check();
    await page.getByRole('group', { name: 'Apps' }).getByRole('checkbox', { name: 'picked-app' }).check();
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await stepUp(ADMIN.password);
    const value = (await page.getByTestId('token-value').textContent(WAIT))!.trim();
    assert.match(value, /^svc_[A-Za-z0-9_-]{43}$/);
    const row = page.getByTestId('token-row').filter({ hasText: 'reader-bot' });
    assert.equal((await row.getByTestId('token-scopes').innerText()).trim(), 'app.read');
    assert.equal((await row.getByTestId('token-apps').innerText()).trim(), 'picked-app');
    assert.equal((await row.getByTestId('token-last-used').innerText()).trim(), 'never');
    // What the page showed is what the server stored.
    const listed = (await admin.req('GET', '/api/auth/api-tokens')).body.items.find(
      (x: any) => x.name === 'reader-bot',
    );
    assert.deepEqual([listed.scopes, listed.app_ids], [['app.read'], [appId]]);
    await shot(page, 'tokens-scoped-created');
    await axe(page, 'tokens created');
    const used = await fetch(s!.url + '/api/auth/me', { headers: { authorization: `Bearer ${value}` } });
    assert.equal(used.status, 200);
    await page.getByRole('button', { name: 'Done' }).click();
    await page.getByRole('link', { name: 'Overview' }).click();
    await page.getByRole('link', { name: 'Tokens' }).click();
    await row.getByTestId('token-last-used').locator('time').waitFor(WAIT);
  });
});

test('viewer: a scope it does not hold is refused with the API message, or not offered at all', async (t) => {
  if (!(await needChromium(t))) return;
  await withFailureShot(page, 'tokens-viewer', async () => {
    await context.clearCookies();
    await signIn(VIEWER);
    const scopes = page.getByRole('group', { name: 'Scopes' });
    await scopes.getByRole('checkbox').first().waitFor(WAIT);
    const deploy = scopes.getByRole('checkbox', { name: /app\.deploy/ });
    await page.getByLabel('Name', { exact: true }).fill('too-wide');
    // Offered only when GET /api/auth/me does not tell the caller's permissions; the server decides.
    if ((await deploy.count()) === 0) return;
    await deploy.check();
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await stepUp(VIEWER.password);
    const alert = page.getByRole('alert').filter({ hasText: 'app.deploy' });
    await alert.waitFor(WAIT);
    assert.match(await alert.innerText(), /not one of your permissions/);
    assert.equal(await page.getByTestId('token-value').count(), 0);
    await axe(page, 'tokens refused');
    await shot(page, 'tokens-viewer-refused');
  });
});
