// The dashboard with an OpenID Connect provider, in Debian's chromium: the login page offers the
// provider, the person signs in at the provider's own pages and lands signed in; a step-up
// operation offers the provider again (a fresh sign-in there) and passes once they come back.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { startTestServer, adminClient, type TestServer } from '../_support/server.js';
import { needChromium, launchChromium, shot, withFailureShot, axe, CHROMIUM } from '../_support/browser.js';
import { freePort } from '../_support/net.js';
import { startOidcProvider, type TestProvider } from '../_support/oidc-provider.js';

const WAIT = { timeout: 60_000 };

let s: TestServer | undefined;
let idp: TestProvider | undefined;
let browser: Browser | undefined;
let page: Page;
let name = '';

before(async () => {
  if (!existsSync(CHROMIUM)) return;
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  idp = await startOidcProvider(`${base}/api/auth/oidc/callback`);
  idp.accounts.set('dana', { preferred_username: 'dana', email: 'dana@example.org', groups: ['platform'] });
  s = await startTestServer({
    SVC_PORT: String(port),
    SVC_PUBLIC_URL: base,
    SVC_OIDC_ISSUER: idp.issuer,
    SVC_OIDC_CLIENT_ID: idp.clientId,
    SVC_OIDC_CLIENT_SECRET: idp.clientSecret,
    SVC_OIDC_ROLE_MAP: JSON.stringify({ platform: 'admin' }),
    SVC_OIDC_NAME: 'Example ID',
  });
  name = 'Example ID';
  // Setup is done: the dashboard opens on its sign-in page.
  await adminClient(s);
  browser = await launchChromium();
  page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
});

after(async () => {
  await browser?.close();
  await s?.stop();
  await idp?.stop();
});

/** The provider's development login page, then its consent page when it asks for one. */
async function signInAtProvider(p: Page, account: string): Promise<void> {
  await p.locator('input[name="login"]').waitFor(WAIT);
  await p.locator('input[name="login"]').fill(account);
  await p.locator('input[name="password"]').fill('any');
  await p.getByRole('button', { name: 'Sign-in' }).click();
  const consent = p.getByRole('button', { name: 'Continue' });
  const back = p.waitForURL((u) => u.origin === s!.url, WAIT);
  await Promise.race([consent.waitFor(WAIT).then(() => consent.click()), back]).catch(() => {});
  await back;
}

test('sign in with the provider from the login page', async (t) => {
  if (!(await needChromium(t))) return;
  await withFailureShot(page, 'oidc-login', async () => {
    await page.goto(s!.url + '/');
    await page.getByRole('heading', { name: 'Sign in' }).waitFor(WAIT);
    const button = page.getByRole('link', { name: `Sign in with ${name}` });
    await button.waitFor(WAIT);
    await shot(page, 'oidc-01-login');
    await axe(page, 'login with a provider');
    await button.click();
    assert.equal(new URL(page.url()).origin, idp!.issuer);
    await signInAtProvider(page, 'dana');
    await page.getByRole('button', { name: 'Log out' }).waitFor(WAIT);
    const me = await page.evaluate(() => fetch('/api/auth/me').then((r) => r.json()));
    assert.equal(me.user.username, 'dana');
    assert.equal(me.user.sso, true);
    await shot(page, 'oidc-02-signed-in');
  });
});

test('a step-up operation offers a fresh sign-in at the provider and passes afterwards', async (t) => {
  if (!(await needChromium(t))) return;
  await withFailureShot(page, 'oidc-step-up', async () => {
    await page.getByRole('link', { name: 'Tokens' }).click();
    await page.getByRole('heading', { name: 'API tokens' }).waitFor(WAIT);
    await page.getByLabel('Name', { exact: true }).fill('from-sso');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'Confirm it is you' });
    await dialog.waitFor(WAIT);
    // No password field for someone who has none.
    assert.equal(await dialog.getByLabel('Password').count(), 0);
    const again = dialog.getByRole('link', { name: `Sign in again with ${name}` });
    await again.waitFor(WAIT);
    await shot(page, 'oidc-03-step-up');
    await axe(page, 'step-up with a provider');
    const asked = idp!.maxAges.length;
    await again.click();
    await signInAtProvider(page, 'dana');
    await page.getByRole('heading', { name: 'API tokens' }).waitFor(WAIT);
    assert.equal(new URL(page.url()).pathname, '/tokens', 'back where the step-up was asked for');
    assert.deepEqual(idp!.maxAges.slice(asked), ['0'], 'the provider was asked for a fresh sign-in');
    await page.getByLabel('Name', { exact: true }).fill('from-sso');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    const value = (await page.getByTestId('token-value').textContent({ timeout: 60_000 }))!.trim();
    assert.match(value, /^svc_[A-Za-z0-9_-]{43}$/);
    await shot(page, 'oidc-04-token-created');
  });
});
