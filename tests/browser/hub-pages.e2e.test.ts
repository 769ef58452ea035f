// The dashboard's hub pages in Debian's chromium against the real control plane: every page
// opened from the navigation with axe and a full-page screenshot; a notification channel created
// and its test delivered to a local HTTPS receiver; the base domain set with its DNS check shown;
// the reset refused until `RESET` is typed (then a step-up, then done); another session revoked
// from the profile page; overview vitals and certificate warnings; markup from the API as text.
// The tests run in order and share one browser context (the operator's session).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startTestServer, adminClient, ADMIN, type TestServer, type Client } from '../_support/server.js';
import {
  needChromium,
  launchChromium,
  shot,
  withFailureShot,
  CHROMIUM,
  axe,
  assertNoInjectedMarkup,
} from '../_support/browser.js';
import { startReceiver, receiverResolve, type Receiver } from '../_support/receiver.js';
import { poll } from '../_support/wait.js';

const WAIT = { timeout: 60_000 };

let s: TestServer | undefined;
let recv: Receiver | undefined;
let other: Client;
let browser: Browser | undefined;
let context: BrowserContext;
let page: Page;

before(async () => {
  if (!existsSync(CHROMIUM)) return;
  recv = await startReceiver();
  s = await startTestServer({ SVC_NOTIFY_ALLOW: '127.0.0.1' });
  Object.assign(s.env.notifier.transport, { agent: recv.agent, resolve: receiverResolve });
  // Setup and a first session outside the browser: the one the profile page revokes.
  other = await adminClient(s);
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  page = await context.newPage();
});

after(async () => {
  await browser?.close();
  await s?.stop();
  await recv?.close();
});

const MARKUP = `<img src=x onerror="window.__xss=1"><b class="xss">x</b>`;

/** Opens a page from the main navigation (by keyboard: focus the link, press Enter). */
async function open(name: string, heading: string): Promise<void> {
  const link = page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true });
  await link.focus();
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { level: 1, name: heading }).waitFor(WAIT);
}

test('sign in; the overview shows host vitals as sparklines and a certificate panel', async (t) => {
  if (!(await needChromium(t))) return;
  await withFailureShot(page, 'hub-overview', async () => {
    await page.goto(s!.url + '/');
    await page.getByLabel('Username').fill(ADMIN.username);
    await page.getByLabel('Password').fill(ADMIN.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor(WAIT);
    // The host topic sends a sample as soon as it is subscribed: a drawn line, not an empty box.
    await page.getByTestId('host-vitals').locator('svg.spark polyline').first().waitFor(WAIT);
    assert.match(await page.getByTestId('host-vitals').innerText(), /CPU/);
    await page.getByTestId('cert-warnings').getByText('No certificate needs attention.').waitFor(WAIT);
    await axe(page, 'overview');
    await shot(page, 'hub-01-overview');
  });
});

test('notifications: a channel created, its test delivered and shown with the delivery log; the name stays text', async (t) => {
  if (!(await needChromium(t))) return;
  await withFailureShot(page, 'hub-notifications', async () => {
    await open('Notifications', 'Notifications');
    await page.getByText('No channels yet.').waitFor(WAIT);
    await axe(page, 'notifications (empty)');
    await page.getByLabel('Kind').selectOption('discord');
    await page.getByRole('textbox', { name: 'Name', exact: true }).fill(`ops ${MARKUP}`);
    await page.getByRole('textbox', { name: 'Webhook URL' }).fill(recv!.url('/hub-hook'));
    await page.getByRole('button', { name: 'Add channel' }).click();
    const channel = page.getByTestId('channel');
    await channel.waitFor(WAIT);
    assert.match(await channel.innerText(), /hooks\.test/, 'the URL hint is shown');
    assert.doesNotMatch(await channel.innerText(), /hub-hook/, 'the URL itself is never shown');
    await channel.getByRole('button', { name: /^Send test/ }).click();
    await channel.getByTestId('test-result').filter({ hasText: 'Test delivered (HTTP 204)' }).waitFor(WAIT);
    const got = recv!.received.filter((r) => r.path === '/hub-hook');
    assert.equal(got.length, 1, 'the receiver got exactly the one test message');
    // The log opened by the test lists that delivery.
    await channel
      .getByTestId('deliveries')
      .locator('tbody tr')
      .filter({ hasText: 'ok' })
      .first()
      .waitFor(WAIT);
    await assertNoInjectedMarkup(page);
    assert.ok((await channel.innerText()).includes('<b class="xss">'), 'the markup is shown as text');
    await axe(page, 'notifications');
    await shot(page, 'hub-02-notifications');
    // A receiver that says no: the test result shows the failure the API reported.
    recv!.script = [500];
    await channel.getByRole('button', { name: /^Send test/ }).click();
    await channel.getByTestId('test-result').filter({ hasText: 'Test failed (HTTP 500)' }).waitFor(WAIT);
    recv!.script = [204];
  });
});

test('instance: info shown; the base domain set with its DNS check; the reset refused until RESET is typed', async (t) => {
  if (!(await needChromium(t))) return;
  await withFailureShot(page, 'hub-instance', async () => {
    const app = await other.req('POST', '/api/apps', {
      name: 'hub-reset-me',
      source: { type: 'image', image: 'svc-test/busybox:latest' },
    });
    assert.equal(app.status, 201, app.text);
    await open('Instance', 'Instance');
    await page.getByTestId('instance-info').waitFor(WAIT);
    assert.match(await page.getByTestId('instance-info').innerText(), /Node\.js\s+v\d+/);

    await page.getByRole('textbox', { name: 'Base domain' }).fill('hub.example.test');
    await page.getByRole('button', { name: 'Save' }).first().click();
    await page.getByTestId('base-domain').filter({ hasText: 'hub.example.test' }).waitFor(WAIT);
    const dns = page.getByTestId('dns-result');
    await dns.waitFor(WAIT);
    assert.match(
      await dns.innerText(),
      /svc\.hub\.example\.test/,
      'the check names the control host under the new base',
    );
    assert.equal(
      (await other.req('GET', '/api/instance/base-domain')).body.base_domain,
      'hub.example.test',
      'saved on the server',
    );

    const reset = page.getByRole('button', { name: 'Reset the instance' });
    const confirmBox = page.getByRole('textbox', { name: 'Type RESET to confirm' });
    assert.equal(await reset.isDisabled(), true, 'refused before anything is typed');
    await confirmBox.fill('reset');
    assert.equal(await reset.isDisabled(), true, 'refused for a lower-case "reset"');
    await confirmBox.press('Enter');
    assert.equal(
      (await other.req('GET', '/api/apps')).body.items.length,
      1,
      'submitting the form with the wrong word did nothing',
    );
    await confirmBox.fill('RESET');
    assert.equal(await reset.isDisabled(), false);
    await axe(page, 'instance');
    await shot(page, 'hub-03-instance');
    await reset.click();
    // The reset needs a step-up: this operator has no TOTP, so the password.
    const dialog = page.getByRole('dialog', { name: 'Confirm it is you' });
    await dialog.waitFor(WAIT);
    await dialog.getByLabel('Password').fill(ADMIN.password);
    await dialog.getByRole('button', { name: 'Verify' }).click();
    await page.getByTestId('reset-result').filter({ hasText: 'Removed 1 app' }).waitFor(WAIT);
    assert.deepEqual((await other.req('GET', '/api/apps')).body.items, [], 'the app is gone');
  });
});

test('domains hub lists the automatic state and checks DNS for a name', async (t) => {
  if (!(await needChromium(t))) return;
  await withFailureShot(page, 'hub-domains', async () => {
    await open('Domains', 'Domains');
    await page.getByRole('heading', { name: 'All domains' }).waitFor(WAIT);
    await page.getByRole('textbox', { name: 'Hostname' }).fill('www.hub.example.test');
    await page.getByRole('button', { name: 'Check DNS' }).click();
    const r = page.getByTestId('dns-result');
    await r.waitFor(WAIT);
    assert.match(await r.innerText(), /www\.hub\.example\.test/);
    // A bad name: the API's own message.
    await page.getByRole('textbox', { name: 'Hostname' }).fill('bad_name!');
    await page.getByRole('button', { name: 'Check DNS' }).click();
    await page
      .getByRole('alert')
      .filter({ hasText: /Invalid host/ })
      .waitFor(WAIT);
    await axe(page, 'domains');
    await shot(page, 'hub-04-domains');
  });
});

test('security shows posture, the traffic monitor, firewall and fail2ban', async (t) => {
  if (!(await needChromium(t))) return;
  await withFailureShot(page, 'hub-security', async () => {
    await open('Security', 'Security');
    await page.getByTestId('posture-item').first().waitFor(WAIT);
    // No access log and no host agent in the test server: each section says so.
    await page
      .getByTestId('traffic')
      .getByText(/traffic monitor is off|^Window/)
      .first()
      .waitFor(WAIT);
    await page
      .getByTestId('firewall')
      .getByText(/^Not available/)
      .waitFor(WAIT);
    await page
      .getByTestId('fail2ban')
      .getByText(/^Not available/)
      .waitFor(WAIT);
    await axe(page, 'security');
    await shot(page, 'hub-05-security');
  });
});

test('profile: sessions listed; revoking the other one ends it on the server', async (t) => {
  if (!(await needChromium(t))) return;
  await withFailureShot(page, 'hub-profile', async () => {
    assert.equal((await other.req('GET', '/api/auth/me')).status, 200, 'the other session works before');
    await open('Profile', 'Profile');
    const rows = page.getByTestId('session-row');
    await poll('two sessions listed', async () => (await rows.count()) >= 2, 30_000, 100);
    const count = await rows.count();
    assert.equal(
      await rows.filter({ hasText: 'current' }).count(),
      1,
      "the browser's own session is marked current",
    );
    assert.equal(
      await page.getByRole('button', { name: /^Revoke/ }).count(),
      count - 1,
      'no revoke on the current session',
    );
    await axe(page, 'profile');
    await shot(page, 'hub-06-profile');
    await page
      .getByRole('button', { name: /^Revoke/ })
      .first()
      .click();
    await poll('one session left', async () => (await rows.count()) === count - 1, 30_000, 100);
    assert.equal((await other.req('GET', '/api/auth/me')).status, 401, 'the revoked session is refused');
    // The page's own session still works.
    await page.getByRole('heading', { name: 'Two-factor authentication' }).waitFor(WAIT);
    await page.getByRole('button', { name: 'Set up TOTP' }).click();
    // Enrolling needs a step-up: the dialog asks for the password unless the reset's step-up is still recent.
    const qr = page.getByRole('img', { name: 'QR code of the TOTP secret' });
    const dialog = page.getByRole('dialog', { name: 'Confirm it is you' });
    await qr.or(dialog).first().waitFor(WAIT);
    if (await dialog.isVisible()) {
      await dialog.getByLabel('Password').fill(ADMIN.password);
      await dialog.getByRole('button', { name: 'Verify' }).click();
    }
    await qr.waitFor(WAIT);
    await shot(page, 'hub-07-profile-totp');
  });
});
