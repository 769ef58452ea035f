// The Operators page and the invitation page in Debian's chromium against the real control plane:
// an owner invites a viewer limited to one app (step-up asked, the one-time link shown), the
// invited person opens the link in another browser, creates their account and lands signed in;
// the owner changes their role, disables them (their page falls back to the sign-in), sends a
// reset link that the person uses to set a new password. axe on each page.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startTestServer, adminClient, ADMIN, Client, type TestServer } from '../_support/server.js';
import { needChromium, launchChromium, shot, withFailureShot, CHROMIUM, axe } from '../_support/browser.js';

const WAIT = { timeout: 60_000 };
const PASSWORD = 'the invited passphrase';

let s: TestServer | undefined;
let api: Client;
let browser: Browser | undefined;
let ownerCtx: BrowserContext;
let guestCtx: BrowserContext;
let page: Page;
let guest: Page;
let inviteUrl = '';

before(async () => {
  if (!existsSync(CHROMIUM)) return;
  s = await startTestServer();
  api = await adminClient(s);
  const app = await api.req('POST', '/api/apps', {
    name: 'shop',
    source: { type: 'image', image: 'nginx:1.27' },
  });
  assert.equal(app.status, 201, app.text);
  browser = await launchChromium();
  ownerCtx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  guestCtx = await browser.newContext({ viewport: { width: 1024, height: 800 } });
  page = await ownerCtx.newPage();
  guest = await guestCtx.newPage();
});

after(async () => {
  await browser?.close();
  await s?.stop();
});

async function stepUp(p: Page): Promise<void> {
  const dialog = p.getByRole('dialog', { name: 'Confirm it is you' });
  await dialog.waitFor(WAIT);
  await dialog.getByLabel('Password').fill(ADMIN.password);
  await dialog.getByRole('button', { name: 'Verify' }).click();
  await dialog.waitFor({ state: 'hidden', ...WAIT });
}

test('an owner invites a viewer limited to one app; the link is shown once after a step-up', async (t) => {
  if (!(await needChromium(t))) return;
  await withFailureShot(page, 'operators-invite', async () => {
    await page.goto(s!.url + '/');
    await page.getByLabel('Username').fill(ADMIN.username);
    await page.getByLabel('Password').fill(ADMIN.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor(WAIT);
    await page
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: 'Operators', exact: true })
      .click();
    await page.getByRole('heading', { level: 1, name: 'Operators' }).waitFor(WAIT);
    await page.locator('[data-testid="operator-row"][data-username="admin"]').waitFor(WAIT);
    await axe(page, 'operators');

    await page.locator('select[name="invite_role"]').selectOption('viewer');
    await page.getByLabel('Every app').uncheck();
    await page.getByLabel('shop').check();
    await page.getByRole('button', { name: 'Create invitation link' }).click();
    await stepUp(page);
    const link = page.getByTestId('invite-link-url');
    await link.waitFor(WAIT);
    inviteUrl = (await link.innerText()).trim();
    assert.match(inviteUrl, /\/invite\/[A-Za-z0-9_-]{43}$/);
    await page.getByTestId('invitation-row').filter({ hasText: 'pending' }).waitFor(WAIT);
    await axe(page, 'operators with a new invitation');
    await shot(page, 'operators-01-invited');
  });
});

test('the invited person opens the link, creates their account and is signed in', async (t) => {
  if (!(await needChromium(t))) return;
  await withFailureShot(guest, 'operators-accept', async () => {
    await guest.goto(inviteUrl);
    await guest.getByRole('heading', { level: 1, name: 'Join as an operator' }).waitFor(WAIT);
    assert.match(await guest.getByTestId('invite-summary').innerText(), /invited as viewer/);
    await axe(guest, 'invitation');
    await guest.getByLabel('Username').fill('vera');
    await guest.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await guest.getByLabel('Repeat the password').fill(PASSWORD);
    await guest.getByRole('button', { name: 'Create my account' }).click();
    // A new operator is offered a second factor at once (the QR code drawn here); they may skip it.
    const offer = guest.getByTestId('invite-totp');
    await offer.getByRole('img', { name: 'QR code of the TOTP secret' }).waitFor(WAIT);
    await axe(guest, 'invitation: two-factor offer');
    await offer.getByRole('button', { name: 'Skip for now' }).click();
    await guest.getByRole('heading', { level: 1, name: 'Overview' }).waitFor(WAIT);
    assert.equal(new URL(guest.url()).pathname, '/');
    // The navigation follows the viewer's permissions: what they may read, not the operators or channels.
    const nav = guest.getByRole('navigation', { name: 'Main' });
    await nav.getByRole('link', { name: 'Audit', exact: true }).waitFor(WAIT);
    assert.equal(await nav.getByRole('link', { name: 'Operators', exact: true }).count(), 0);
    assert.equal(await nav.getByRole('link', { name: 'Notifications', exact: true }).count(), 0);
    const vera = (await api.req('GET', '/api/operators')).body.items.find((o: any) => o.username === 'vera');
    assert.equal(vera.role, 'viewer');
    assert.equal(vera.app_ids.length, 1);
    // Used: the same link now says so.
    await guest.goto(inviteUrl);
    await guest.getByText('This link is unknown, already used or expired').waitFor(WAIT);
  });
});

test('the owner changes the role, disables the operator (their session ends) and sends a reset link', async (t) => {
  if (!(await needChromium(t))) return;
  await withFailureShot(page, 'operators-manage', async () => {
    await page.reload();
    const row = page.locator('[data-testid="operator-row"][data-username="vera"]');
    await row.waitFor(WAIT);
    assert.match(await row.innerText(), /shop/);
    await row.getByRole('button', { name: 'Edit vera' }).click();
    await page.locator('select[name="operator_role"]').selectOption('deployer');
    await page.getByRole('form', { name: 'Change vera' }).getByRole('button', { name: 'Save' }).click();
    await row.filter({ hasText: 'deployer' }).waitFor(WAIT);

    page.once('dialog', (d) => void d.accept());
    await row.getByRole('button', { name: 'Disable vera' }).click();
    await row.filter({ hasText: 'disabled' }).waitFor(WAIT);
    // The person's next request is refused: their dashboard falls back to the sign-in page.
    await guest.goto(s!.url + '/');
    await guest.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor(WAIT);

    await row.getByRole('button', { name: 'Enable vera' }).click();
    await row.filter({ hasText: 'active' }).waitFor(WAIT);
    await row.getByRole('button', { name: 'Reset link for vera' }).click();
    const reset = page.getByTestId('reset-link-url');
    await reset.waitFor(WAIT);
    const resetUrl = (await reset.innerText()).trim();
    await axe(page, 'operators with a reset link');
    await shot(page, 'operators-02-reset');

    await guest.goto(resetUrl);
    await guest.getByRole('heading', { level: 1, name: 'Set a new password' }).waitFor(WAIT);
    await axe(guest, 'reset link');
    const NEW = 'a fresh passphrase for vera';
    await guest.getByLabel('New password').fill(NEW);
    await guest.getByLabel('Repeat the password').fill(NEW);
    await guest.getByRole('button', { name: 'Set password and sign in' }).click();
    await guest.getByRole('heading', { level: 1, name: 'Overview' }).waitFor(WAIT);
    assert.equal(
      (await new Client(s!.url).req('POST', '/api/auth/login', { username: 'vera', password: PASSWORD }))
        .status,
      401,
      'the old password is refused',
    );
    assert.equal(
      (await new Client(s!.url).req('POST', '/api/auth/login', { username: 'vera', password: NEW })).status,
      200,
    );
  });
});
