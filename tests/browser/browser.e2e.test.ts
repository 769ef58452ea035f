// The dashboard end to end in Debian's chromium, against the real control plane, dockerd and a
// git daemon on loopback: first run with TOTP, sign-in, an app from a git URL deployed with its
// build log streaming, step-up, tokens, markup rendered as text, accessibility, logout.
// The tests run in order and share one browser context (the operator's session).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startTestServer, setupToken, type TestServer } from '../_support/server.js';
import {
  needChromium,
  launchChromium,
  shot,
  withFailureShot,
  axe,
  assertNoInjectedMarkup,
} from '../_support/browser.js';
import { needDocker, dockerReachable, ensureBaseImage } from '../_support/docker.js';
import { startGitServer, webRepo, cleanupApp, type GitServer } from '../engine/_deploy.js';
import { totpCode } from '#lib/auth/totp.js';
import { invalidateCredentials } from '#lib/auth/cache.js';
import { existsSync } from 'node:fs';
import { CHROMIUM } from '../_support/browser.js';
import { poll } from '../_support/wait.js';

const OPERATOR = { username: 'ops', password: 'a long enough passphrase 42' };
const WAIT = { timeout: 60_000 };
const DEPLOY_WAIT = { timeout: 300_000 };

let s: TestServer | undefined;
let git: GitServer | undefined;
let browser: Browser | undefined;
let context: BrowserContext;
let page: Page;
let secret = '';
let recovery: string[] = [];
let enabledAt = 0;
const apps = new Set<string>();
const uniq = () => randomBytes(3).toString('hex');

before(async () => {
  if (!existsSync(CHROMIUM)) return;
  s = await startTestServer();
  s.env.deployments.opts.healthTimeoutMs = 60_000;
  s.env.deployments.opts.settleMs = 1_500;
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  page = await context.newPage();
  if (await dockerReachable()) {
    await ensureBaseImage();
    git = await startGitServer();
  }
});

after(async () => {
  await browser?.close();
  if (s) {
    for (const a of apps) await cleanupApp(s.env.engine, a);
    await s.stop();
  }
  await git?.stop();
});

/** Markup that would create elements (and set a flag) if any of it were parsed as HTML. */
const MARKUP = (n: number) => `<img src=x onerror="window.__xss=${n}"><b class="xss">x${n}</b>`;

test('first run: setup token, first operator, TOTP enrolled from a locally drawn QR code, recovery codes', async (t) => {
  if (!(await needChromium(t))) return;
  await withFailureShot(page, 'first-run', async () => {
    const requests: string[] = [];
    page.on('request', (r) => requests.push(r.url()));
    await page.goto(s!.url + '/');
    await page.getByRole('heading', { name: 'Set up svc' }).waitFor(WAIT);
    await shot(page, '01-setup');
    await axe(page, 'setup');
    // A wrong token shows the API's own message.
    await page.getByLabel('Setup token').fill('not-the-token');
    await page.getByLabel('Username').fill(OPERATOR.username);
    await page.getByLabel('Password', { exact: true }).fill(OPERATOR.password);
    await page.getByLabel('Repeat password').fill(OPERATOR.password);
    await page.getByRole('button', { name: 'Create operator' }).click();
    await page.getByRole('alert').waitFor(WAIT);
    assert.notEqual((await page.getByRole('alert').textContent())!.trim(), '');
    await page.getByLabel('Setup token').fill(await setupToken(s!));
    await page.getByRole('button', { name: 'Create operator' }).click();
    await page.getByRole('heading', { name: 'Two-factor authentication' }).waitFor(WAIT);
    const qr = page.getByRole('img', { name: 'QR code of the TOTP secret' });
    await qr.waitFor(WAIT);
    assert.ok(((await qr.locator('path').getAttribute('d')) ?? '').length > 100, 'the QR code has modules');
    secret = (await page.getByTestId('totp-secret').textContent())!.trim();
    assert.match(secret, /^[A-Z2-7]+=*$/);
    await shot(page, '02-totp-enrol');
    await axe(page, 'totp enrolment');
    enabledAt = Math.floor(Date.now() / 1000);
    await page.getByLabel('Code', { exact: true }).fill(await totpCode(secret, { epoch: enabledAt }));
    await page.getByRole('button', { name: 'Enable' }).click();
    await page.getByRole('heading', { name: 'Recovery codes' }).waitFor(WAIT);
    recovery = (await page.getByTestId('recovery-codes').locator('li').allTextContents()).map((c) =>
      c.trim(),
    );
    assert.ok(recovery.length >= 8, `recovery codes shown: ${recovery.length}`);
    await shot(page, '03-recovery-codes');
    await page.getByRole('button', { name: 'I saved them, continue' }).click();
    await page.getByRole('heading', { name: 'Overview' }).waitFor(WAIT);
    await page.getByRole('status').filter({ hasText: 'live' }).waitFor(WAIT);
    // Everything the pages loaded came from the control plane itself.
    const origin = new URL(s!.url).origin;
    assert.deepEqual(
      requests.filter((u) => !u.startsWith(origin) && !u.startsWith('data:') && !u.startsWith('blob:')),
      [],
    );
    const me = await page.evaluate(() => fetch('/api/auth/me').then((r) => r.json()));
    assert.equal(me.user.username, OPERATOR.username);
    assert.equal(me.user.totp_enabled, true);
  });
});

test('sign in: password, then the TOTP code; a wrong password shows the API message', async (t) => {
  if (!(await needChromium(t))) return;
  await withFailureShot(page, 'login', async () => {
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor(WAIT);
    assert.equal(
      await page.evaluate(() => fetch('/api/auth/me').then((r) => r.status)),
      401,
      'logged out on the server',
    );
    await shot(page, '04-login');
    await axe(page, 'login');
    await page.getByLabel('Username').fill(OPERATOR.username);
    await page.getByLabel('Password').fill('wrong password, surely');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page
      .getByRole('alert')
      .filter({ hasText: /invalid|wrong|incorrect/i })
      .waitFor(WAIT);
    await page.getByLabel('Password').fill(OPERATOR.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    const code = page.getByLabel('Authentication code (or a recovery code)');
    await code.waitFor(WAIT);
    await shot(page, '05-login-totp');
    // Enrolment used the current time step; a used step is refused, so take the next one.
    await code.fill(await totpCode(secret, { epoch: enabledAt + 30 }));
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.getByRole('heading', { name: 'Overview' }).waitFor(WAIT);
    await shot(page, '06-overview-empty');
    await axe(page, 'overview');
  });
});

test('an app from a git URL: created, deployed, the build log streams live, the overview follows, markup stays text', async (t) => {
  if (!(await needChromium(t))) return;
  if (!(await needDocker(t))) return;
  await withFailureShot(page, 'deploy', async () => {
    const repo = `dash-${uniq()}`;
    const name = `dash-${uniq()}`;
    apps.add(name);
    // Markup in the commit subject and in a build log line; both must show as text.
    await git!.commit(
      repo,
      webRepo('hello from the dashboard', `RUN echo '${MARKUP(2)}'`),
      `first ${MARKUP(1)}`,
    );
    await page.getByLabel('Name', { exact: true }).fill(name);
    await page.getByLabel('Repository URL').fill(git!.url(repo));
    await page.getByLabel('Branch').fill('main');
    await page.getByRole('button', { name: 'Create app' }).click();
    await page.getByRole('heading', { name }).waitFor(WAIT);
    assert.match(page.url(), /\/apps\/[^/]+$/);

    // A non-secret env value with markup.
    await page.getByLabel('Key', { exact: true }).fill('GREETING');
    await page.getByLabel('Value', { exact: true }).fill(MARKUP(3));
    await page.getByLabel('Secret', { exact: true }).uncheck();
    await page.getByRole('button', { name: 'Set', exact: true }).click();
    await page.getByTestId('env-row').filter({ hasText: 'GREETING' }).waitFor(WAIT);
    // A secret one is listed without its value.
    await page.getByLabel('Key', { exact: true }).fill('API_SECRET');
    await page.getByLabel('Value', { exact: true }).fill('s3cr3t-value-never-listed');
    await page.getByLabel('Secret', { exact: true }).check();
    await page.getByRole('button', { name: 'Set', exact: true }).click();
    await page.getByTestId('env-row').filter({ hasText: 'API_SECRET' }).waitFor(WAIT);
    assert.equal(await page.getByText('s3cr3t-value-never-listed').count(), 0, 'secret values are redacted');

    // A second tab on the overview sees the deployment through the WebSocket alone.
    const watcher = await context.newPage();
    await watcher.goto(s!.url + '/');
    await watcher.getByRole('heading', { name: 'Overview' }).waitFor(WAIT);
    await watcher.getByRole('status').filter({ hasText: 'live' }).waitFor(WAIT);

    await page.getByRole('button', { name: 'Deploy', exact: true }).click();
    await watcher.getByTestId('active-deployments').getByText(name).waitFor(WAIT);
    await shot(watcher, '07-overview-active-deployment');
    // The log view has no REST source: every line on screen came over the WebSocket.
    await page.getByTestId('log-line').first().waitFor(WAIT);
    await page.getByTestId('deployment-row').first().locator('.badge-succeeded').waitFor(DEPLOY_WAIT);
    await page.getByTestId('log-line').filter({ hasText: 'class="xss"' }).first().waitFor(WAIT);
    await page
      .getByTestId('deployment-row')
      .getByText(`first ${MARKUP(1)}`)
      .waitFor(WAIT);
    await page
      .getByTestId('env-row')
      .filter({ hasText: MARKUP(3) })
      .waitFor(WAIT);
    await assertNoInjectedMarkup(page);
    await watcher
      .getByTestId('active-deployments')
      .getByText(name)
      .waitFor({ state: 'detached', ...WAIT });
    await watcher.close();
    // The services list follows the deployment's end without a reload.
    await page.getByTestId('service-row').filter({ hasText: 'app' }).waitFor(WAIT);
    await shot(page, '08-app');
    await axe(page, 'app');

    // A second version, then a rollback to the first from its row.
    await git!.commit(repo, webRepo('hello again', `RUN echo '${MARKUP(2)}'`), 'second version');
    await page.getByRole('button', { name: 'Deploy', exact: true }).click();
    await page
      .getByTestId('deployment-row')
      .filter({ hasText: 'second version' })
      .locator('.badge-succeeded')
      .waitFor(DEPLOY_WAIT);
    // A rollback asks first.
    page.once('dialog', (d) => void d.accept());
    await page
      .getByTestId('deployment-row')
      .filter({ hasText: 'first' })
      .getByRole('button', { name: 'Roll back' })
      .click();
    const rolled = page.getByTestId('deployment-row').filter({ hasText: 'rollback' });
    await rolled.locator('.badge-succeeded').waitFor(DEPLOY_WAIT);
    // The log view now follows the rollback; pausing stops following.
    await page.getByRole('button', { name: 'Pause' }).click();
    await page.getByRole('button', { name: 'Follow' }).waitFor(WAIT);

    // Reveal of the secret is the operator's explicit act, and needs a step-up: the dialog asks for
    // a code (a recovery code here: the sign-in used this time step's TOTP code), then retries.
    await page
      .getByTestId('env-row')
      .filter({ hasText: 'API_SECRET' })
      .getByRole('button', { name: 'Reveal' })
      .click();
    const stepUp = page.getByRole('dialog', { name: 'Confirm it is you' });
    await stepUp.waitFor(WAIT);
    assert.equal(
      await page.getByText('s3cr3t-value-never-listed').count(),
      0,
      'nothing is revealed before the step-up',
    );
    await stepUp.getByRole('textbox').fill(recovery[1]!);
    await stepUp.getByRole('button', { name: 'Verify' }).click();
    await page.getByText('s3cr3t-value-never-listed').waitFor(WAIT);
    // A step-up lasts five minutes: end it as if they had passed, so the token test asks again.
    await s!.env.db.updateTable('sessions').set({ step_up_until: null }).execute();
    invalidateCredentials();

    // Back on the overview the app is listed with its status; its name is a link.
    await page.getByRole('link', { name: 'Overview' }).click();
    await page
      .getByTestId('app-row')
      .filter({ hasText: name })
      .locator('.badge-running')
      .waitFor(DEPLOY_WAIT);
    await shot(page, '09-overview');
  });
});

test('tokens: creating one asks for a step-up, shows the value once with its expiry; revoke removes it', async (t) => {
  if (!(await needChromium(t))) return;
  await withFailureShot(page, 'tokens', async () => {
    await page.getByRole('link', { name: 'Tokens' }).click();
    await page.getByRole('heading', { name: 'API tokens' }).waitFor(WAIT);
    await page.getByLabel('Name', { exact: true }).fill('ci-bot');
    await page.getByLabel('Expires in').selectOption({ label: '7 days' });
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    // step_up_required -> the dialog; a wrong code shows the API's message, a recovery code passes.
    const dialog = page.getByRole('dialog', { name: 'Confirm it is you' });
    await dialog.waitFor(WAIT);
    await shot(page, '10-step-up');
    await dialog.getByRole('textbox').fill('000000');
    await dialog.getByRole('button', { name: 'Verify' }).click();
    await dialog.getByRole('alert').waitFor(WAIT);
    await dialog.getByRole('textbox').fill(recovery[0]!);
    await dialog.getByRole('button', { name: 'Verify' }).click();
    // The original request is retried once and succeeds.
    const value = (await page.getByTestId('token-value').textContent({ timeout: 60_000 }))!.trim();
    assert.match(value, /^svc_[A-Za-z0-9_-]{43}$/);
    assert.match((await page.getByTestId('new-token').textContent())!, /expires/);
    await shot(page, '11-token-created');
    await axe(page, 'tokens');
    // The token works as a bearer, from outside the browser.
    const ok = await fetch(s!.url + '/api/auth/me', { headers: { authorization: `Bearer ${value}` } });
    assert.equal(ok.status, 200);
    await page.getByRole('button', { name: 'Done' }).click();
    assert.equal(await page.getByText(value).count(), 0, 'the value is not shown again');
    page.once('dialog', (d) => void d.accept());
    await page
      .getByTestId('token-row')
      .filter({ hasText: 'ci-bot' })
      .getByRole('button', { name: 'Revoke' })
      .click();
    await page
      .getByTestId('token-row')
      .filter({ hasText: 'ci-bot' })
      .waitFor({ state: 'detached', ...WAIT });
    const gone = await fetch(s!.url + '/api/auth/me', { headers: { authorization: `Bearer ${value}` } });
    assert.equal(gone.status, 401);
  });
});

test('audit and security pages list what happened and the posture', async (t) => {
  if (!(await needChromium(t))) return;
  await withFailureShot(page, 'audit-security', async () => {
    await page.getByRole('link', { name: 'Audit' }).click();
    await page.getByTestId('audit-row').first().waitFor(WAIT);
    await shot(page, '12-audit');
    await axe(page, 'audit');
    await page.getByRole('link', { name: 'Security' }).click();
    await page.getByTestId('posture-item').first().waitFor(WAIT);
    await shot(page, '13-security');
    await axe(page, 'security');
  });
});

test('a dropped WebSocket shows "reconnecting", comes back by itself and subscribes its topics again', async (t) => {
  if (!(await needChromium(t))) return;
  const tab = await context.newPage();
  await withFailureShot(tab, 'reconnect', async () => {
    // Every socket of this tab goes through the test, which forwards it to the real server and can cut it.
    const sockets: Array<{ route: import('playwright-core').WebSocketRoute; sent: string[] }> = [];
    await tab.routeWebSocket(/\/api\/ws$/, (route) => {
      const entry = { route, sent: [] as string[] };
      sockets.push(entry);
      const server = route.connectToServer();
      route.onMessage((m) => {
        entry.sent.push(String(m));
        server.send(m);
      });
    });
    await tab.goto(s!.url + '/');
    await tab.getByRole('heading', { name: 'Overview' }).waitFor(WAIT);
    const status = tab.getByRole('status').filter({ hasText: /^(live|connecting|reconnecting)$/ });
    await status.filter({ hasText: 'live' }).waitFor(WAIT);
    const topics = (i: number) =>
      sockets[i]!.sent.map((m) => JSON.parse(m))
        .filter((m) => m.type === 'subscribe')
        .map((m) => m.topic)
        .sort();
    // The overview's topics: app statuses, deployments in flight, host vitals.
    await poll('the first socket subscribes', () => topics(0).length === 3, 60_000, 50);
    assert.deepEqual(topics(0), ['apps', 'deployments', 'host']);
    // Record every state the indicator shows from here on.
    await tab.evaluate(() => {
      const el = [...document.querySelectorAll('[role="status"]')].find((e) => e.classList.contains('ws'))!;
      const seen: string[] = ((window as any).__wsStates = []);
      new MutationObserver(() => seen.push(el.textContent ?? '')).observe(el, {
        childList: true,
        characterData: true,
        subtree: true,
      });
    });
    await sockets[0]!.route.close({ code: 1012, reason: 'test drops the connection' });
    await status.filter({ hasText: 'live' }).waitFor(WAIT);
    await tab.waitForFunction(() => (window as any).__wsStates.includes('live'), undefined, WAIT);
    const states: string[] = await tab.evaluate(() => (window as any).__wsStates);
    assert.ok(states.includes('reconnecting'), `states shown: ${states.join(' -> ')}`);
    assert.equal(sockets.length, 2, 'one new connection, no reload');
    await poll('the new socket subscribes again', () => topics(1).length === 3, 60_000, 50);
    assert.deepEqual(topics(1), ['apps', 'deployments', 'host']);
    await tab.getByRole('heading', { name: 'Overview' }).waitFor(WAIT);
  });
  await tab.close();
});

test('log out ends the session on the server; every page then asks to sign in', async (t) => {
  if (!(await needChromium(t))) return;
  await withFailureShot(page, 'logout', async () => {
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor(WAIT);
    assert.equal(await page.evaluate(() => fetch('/api/auth/me').then((r) => r.status)), 401);
    await page.goto(s!.url + '/tokens');
    await page.getByRole('heading', { name: 'Sign in' }).waitFor(WAIT);
  });
});
