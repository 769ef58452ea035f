// The app page end to end in Debian's chromium, against the real control plane, dockerd, the git
// server fixture and the edge lab (Caddy, Pebble, a test DNS server): every tab of a deployed app
// opened, checked with axe and photographed; a domain added and listed with its status; request
// metrics charted after real requests through Caddy; a `.env` pasted and applied; runtime log lines
// and CPU/memory arriving live; markup in log lines, env values and a pasted key rendered as text;
// the container shell over its WebSocket after a step-up.
// The tests run in order and share one browser page (the operator's session).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
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
import { needDocker, dockerReachable, ensureBaseImage, BASE_IMAGE } from '../_support/docker.js';
import { needEdge, edgeUsable, startEdgeLab, type EdgeLab } from '../_support/edge.js';
import { startGitServer, cleanupApp, waitStatus, type GitServer } from '../engine/_deploy.js';
import { poll } from '../_support/wait.js';
import { ensureDbImages, needDbImages, type DbImages } from '../_support/dbimages.js';
import { ENGINES } from '#lib/databases/engines/index.js';
import { deleteApp } from '#lib/apps/ops.js';
import { invalidateCredentials } from '#lib/auth/cache.js';

const WAIT = { timeout: 60_000 };
const LONG = { timeout: 180_000 };
const TABS = [
  'Overview',
  'Logs',
  'Metrics',
  'Domains',
  'Databases',
  'Backups',
  'Source',
  'Webhook & key',
  'Shell',
];

let s: TestServer | undefined;
let lab: EdgeLab | undefined;
let git: GitServer | undefined;
let browser: Browser | undefined;
let page: Page;
let c: Client;
let app: { id: string; name: string } | undefined;
const uniq = () => randomBytes(3).toString('hex');
const HOST = `shop-${uniq()}.example.test`;

/** Markup that would create elements (and set a flag) if any of it were parsed as HTML. */
const MARKUP = (n: number) => `<img src=x onerror="window.__xss=${n}"><b class="xss">x${n}</b>`;

/** A web app whose container also prints a line every second (one with markup) to stdout. */
function repoFiles(): Record<string, string> {
  return {
    'index.html': 'hello from the app page\n',
    'run.sh': [
      '#!/bin/sh',
      "trap 'exit 0' TERM",
      'httpd -f -p 8080 -h /www &',
      'n=0',
      'while true; do',
      '  n=$((n+1))',
      '  echo "tick $n"',
      `  echo '${MARKUP(7)}'`,
      '  sleep 1',
      'done',
      '',
    ].join('\n'),
    Dockerfile: [
      `FROM ${BASE_IMAGE}`,
      'COPY index.html /www/index.html',
      'COPY run.sh /run.sh',
      'EXPOSE 8080',
      // No RUN step: the build then needs no container (nor the engine's default bridge).
      'CMD ["sh", "/run.sh"]',
      '',
    ].join('\n'),
  };
}

function imageMap(img: DbImages): Record<string, string> {
  const map: Record<string, string> = {};
  for (const e of ['postgres', 'mariadb', 'redis'] as const)
    for (const ref of Object.values(ENGINES[e].spec.images)) map[ref] = img[e];
  return map;
}

/** Waits for `done`; when the step-up dialog comes first (no recent step-up), answers it with the password. */
async function withStepUp(done: import('playwright-core').Locator, timeout = 180_000): Promise<void> {
  const dialog = page.getByRole('dialog', { name: 'Confirm it is you' });
  // The loser of the race times out later; its rejection is dropped (the winner decides).
  const first = await Promise.race([
    done.waitFor({ timeout }).then(
      () => 'done',
      () => 'timeout',
    ),
    dialog.waitFor({ timeout }).then(
      () => 'dialog',
      () => 'timeout',
    ),
  ]);
  assert.notEqual(first, 'timeout', 'neither the result nor the step-up dialog appeared');
  if (first === 'dialog') {
    await dialog.getByLabel('Password').fill(ADMIN.password);
    await dialog.getByRole('button', { name: 'Verify' }).click();
    await done.waitFor({ timeout });
  }
}

async function openTab(label: string): Promise<void> {
  await page.getByRole('tab', { name: label, exact: true }).click();
  await page.getByRole('tab', { name: label, exact: true, selected: true }).waitFor(WAIT);
}

before(async () => {
  if (!existsSync(CHROMIUM) || !(await dockerReachable()) || (await edgeUsable()) !== null) return;
  await ensureBaseImage();
  // Local database images over the catalog's references (no registry here), when they can be built.
  const img = await ensureDbImages().catch(() => null);
  lab = await startEdgeLab();
  s = await startTestServer(
    {
      ...lab.vars,
      SVC_ENABLE_SHELL: 'true',
      ...(img ? { SVC_IMAGE_MAP: JSON.stringify(imageMap(img)) } : {}),
    },
    { edge: { checkIntervalMs: 1000, checkerTickMs: 250 } },
  );
  s.env.deployments.opts.healthTimeoutMs = 60_000;
  s.env.deployments.opts.settleMs = 1_500;
  git = await startGitServer();
  c = await adminClient(s);
  browser = await launchChromium();
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  // The API client's session, handed to the browser: the sign-in pages have their own test.
  await context.addCookies([...c.cookies].map(([name, value]) => ({ name, value, url: s!.url })));
  page = await context.newPage();
});

after(async () => {
  await browser?.close();
  if (s) {
    if (app) {
      await deleteApp(s.env, app.id, { volumes: true }).catch((e) => console.error('cleanup', e));
      await cleanupApp(s.env.engine, app.name);
    }
    await s.stop();
  }
  await git?.stop();
  await lab?.stop();
});

async function ready(t: import('node:test').TestContext): Promise<boolean> {
  if (!(await needChromium(t)) || !(await needDocker(t)) || !(await needEdge(t))) return false;
  if (!app) {
    // Deployed through the API: the deploy flow in the browser is browser.e2e.test.ts's.
    const repo = `apppage-${uniq()}`;
    await git!.commit(repo, repoFiles(), 'app page fixture');
    const name = `apppage-${uniq()}`;
    const r = await c.req('POST', '/api/apps', {
      name,
      source: { type: 'git', repo_url: git!.url(repo), branch: 'main' },
    });
    assert.equal(r.status, 201, r.text);
    app = { id: r.body.app.id, name };
    const d = await c.req('POST', `/api/apps/${app.id}/deployments`, {});
    assert.equal(d.status, 202, d.text);
    await waitStatus(c, app.id, d.body.deployment.id, ['succeeded'], 300_000);
    await page.goto(`${s!.url}/apps/${encodeURIComponent(app.id)}`);
    await page.getByRole('heading', { name }).waitFor(WAIT);
    await page.getByRole('status').filter({ hasText: 'live' }).waitFor(WAIT);
  }
  return true;
}

test('every tab of a deployed app opens, passes axe and is photographed; arrow keys move between tabs', async (t) => {
  if (!(await ready(t))) return;
  await withFailureShot(page, 'app-tabs', async () => {
    for (const label of TABS) {
      await openTab(label);
      // Each tab's own heading (or the overview's services) shows it rendered, not just selected.
      const heading = {
        Overview: 'Services',
        Logs: 'Runtime logs',
        Metrics: 'Request metrics',
        Domains: 'Domains',
        Databases: 'Databases',
        Backups: 'Backups',
        Source: 'Source',
        'Webhook & key': 'Webhook',
        Shell: 'Shell',
      }[label]!;
      await page.getByRole('heading', { name: heading, exact: true }).waitFor(WAIT);
      if (label === 'Metrics')
        await page.getByTestId('metrics-chart').first().locator('canvas').waitFor(WAIT);
      await axe(page, `app tab ${label}`);
      await shot(page, `app-tab-${label.toLowerCase().replace(/[^a-z]+/g, '-')}`);
    }
    // The tab is in the address: a reload lands on it again.
    assert.match(page.url(), /\?tab=shell$/);
    await page.reload();
    await page.getByRole('tab', { name: 'Shell', selected: true }).waitFor(WAIT);
    // Keyboard: arrows walk the tab list and move the focus with the selection.
    await page.getByRole('tab', { name: 'Shell' }).focus();
    await page.keyboard.press('Home');
    await page.getByRole('tab', { name: 'Overview', selected: true }).waitFor(WAIT);
    await page.keyboard.press('ArrowRight');
    await page.getByRole('tab', { name: 'Logs', selected: true }).waitFor(WAIT);
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Logs');
    await page.goBack();
    await page.getByRole('tab', { name: 'Overview', selected: true }).waitFor(WAIT);
  });
});

test('services show CPU and memory from the stats topic, live', async (t) => {
  if (!(await ready(t))) return;
  await withFailureShot(page, 'app-stats', async () => {
    await openTab('Overview');
    const row = page.getByTestId('service-row').filter({ hasText: 'app' });
    await row.getByTestId('service-cpu').filter({ hasText: '%' }).waitFor(WAIT);
    await row
      .getByTestId('service-memory')
      .filter({ hasText: /\d+(\.\d)? (B|KB|MB|GB)/ })
      .waitFor(WAIT);
  });
});

test('runtime logs of the running container arrive live, filter by service and search; markup stays text', async (t) => {
  if (!(await ready(t))) return;
  await withFailureShot(page, 'app-logs', async () => {
    await openTab('Logs');
    const lines = page.getByTestId('log-line');
    await lines
      .filter({ hasText: /tick \d+/ })
      .first()
      .waitFor(WAIT);
    // Live: a tick printed after the page subscribed shows up without any reload.
    const last = async () =>
      Math.max(
        0,
        ...(await lines.filter({ hasText: /tick \d+/ }).allTextContents()).map((l) =>
          Number(/tick (\d+)/.exec(l)?.[1] ?? 0),
        ),
      );
    const seen = await last();
    await poll('a newer tick arrives', async () => (await last()) > seen + 1, 60_000, 250);
    await lines.filter({ hasText: 'class="xss"' }).first().waitFor(WAIT);
    await assertNoInjectedMarkup(page);
    assert.match((await lines.first().textContent())!, /^app /, 'each line names its service');

    await page.getByLabel('Service').selectOption('app');
    await lines
      .filter({ hasText: /tick \d+/ })
      .first()
      .waitFor(WAIT);
    await page.getByLabel('Search').fill('no line has this text');
    await poll('the search hides every line', async () => (await lines.count()) === 0, 30_000, 100);
    await page.getByLabel('Search').fill('TICK');
    await lines.first().waitFor(WAIT);
    assert.ok(
      (await lines.allTextContents()).every((l) => /tick \d+/.test(l)),
      'only matching lines (case-insensitive)',
    );
    await page.getByLabel('Search').fill('');
    await page.getByRole('button', { name: 'Pause' }).click();
    await page.getByRole('button', { name: 'Follow' }).waitFor(WAIT);
  });
});

test('runtime logs keep arriving after the WebSocket drops, none missing', async (t) => {
  if (!(await ready(t))) return;
  // A tab of its own whose socket the test can cut; after the reconnect the topic is subscribed
  // again and what was printed meanwhile must show (replayed by the source), with nothing lost.
  await openTab('Overview');
  const tab = await page.context().newPage();
  await withFailureShot(tab, 'app-logs-reconnect', async () => {
    const sockets: Array<{
      page: import('playwright-core').WebSocketRoute;
      server: import('playwright-core').WebSocketRoute;
    }> = [];
    await tab.routeWebSocket(/\/api\/ws$/, (route) => {
      sockets.push({ page: route, server: route.connectToServer() });
    });
    await tab.goto(`${s!.url}/apps/${encodeURIComponent(app!.id)}?tab=logs`);
    const ticks = tab.getByTestId('log-line').filter({ hasText: /tick \d+/ });
    await ticks.first().waitFor(WAIT);
    const last = async () =>
      Math.max(0, ...(await ticks.allTextContents()).map((l) => Number(/tick (\d+)/.exec(l)?.[1] ?? 0)));
    await poll('some ticks arrive', async () => (await last()) > 0, 60_000, 250);
    const first = await last();
    await poll('a few live ticks', async () => (await last()) >= first + 3, 60_000, 250);
    // Both ends: the control plane sees its only subscriber leave and stops the source.
    await sockets[0]!.server.close({ code: 1001, reason: 'test drops the connection' });
    await sockets[0]!.page.close({ code: 1012, reason: 'test drops the connection' });
    const before = await last();
    await poll('a second socket', () => sockets.length === 2, 60_000, 100);
    await poll(
      'ticks printed after the reconnect show up',
      async () => (await last()) >= before + 8,
      90_000,
      250,
    );
    // None is missing: those printed while the socket was down come back with the source's
    // replay, the later ones live (the view follows, so the newest ~40 lines are rendered).
    const shown = new Set((await ticks.allTextContents()).map((l) => Number(/tick (\d+)/.exec(l)?.[1])));
    const now = Math.max(...shown);
    const missing = [];
    for (let n = before + 1; n <= now; n++) if (!shown.has(n)) missing.push(n);
    assert.deepEqual(missing, [], `ticks ${before + 1}..${now} all shown`);
  });
  await tab.close();
});

test('a pasted .env shows what will change, is applied with one PUT, and markup stays text', async (t) => {
  if (!(await ready(t))) return;
  await withFailureShot(page, 'app-env-bulk', async () => {
    await openTab('Overview');
    // One variable already there, to show as changed.
    const put = await c.req('PUT', `/api/apps/${app!.id}/env`, {
      items: [{ key: 'LOG_LEVEL', value: 'info', secret: false }],
    });
    assert.equal(put.status, 200, put.text);
    await page.reload();
    await page.getByTestId('env-row').filter({ hasText: 'LOG_LEVEL' }).waitFor(WAIT);

    const puts: string[] = [];
    page.on('request', (r) => {
      if (r.method() === 'PUT' && r.url().endsWith(`/api/apps/${app!.id}/env`)) puts.push(r.postData() ?? '');
    });
    await page.getByRole('button', { name: 'Paste .env' }).click();
    const bulk = page.getByTestId('env-bulk');
    // A key with markup is refused here, line by line, and shown as text.
    // (An attribute's `=` would end the key early, so this key's markup has none.)
    await bulk.getByLabel('.env content').fill('<marquee>x8</marquee>=1\nOK=1\n');
    await bulk.getByTestId('env-bulk-errors').filter({ hasText: 'Line 1' }).waitFor(WAIT);
    assert.match(
      (await bulk.getByTestId('env-bulk-errors').textContent())!,
      /"<marquee>x8<\/marquee>" is not a valid key/,
    );
    assert.equal(await page.locator('marquee').count(), 0, 'the key was not parsed as markup');
    await assertNoInjectedMarkup(page);
    assert.equal(
      await bulk.getByRole('button', { name: /^Apply/ }).isDisabled(),
      true,
      'nothing can be applied while a line is wrong',
    );

    const paste = [
      '# pasted from the old host',
      'export LOG_LEVEL=debug',
      `GREETING="${MARKUP(9).replace(/"/g, '\\"')}"`,
      "SINGLE='a $literal # not a comment'",
      'PLAIN=value # a comment',
      'MULTI="line one',
      'line two"',
      'API_TOKEN=tok-never-listed',
      '',
    ].join('\n');
    await bulk.getByLabel('.env content').fill(paste);
    await bulk.getByLabel('Store new keys as secrets').uncheck();
    const change = (key: string) =>
      bulk.getByTestId('env-change').filter({ has: page.locator('td', { hasText: new RegExp(`^${key}$`) }) });
    await change('LOG_LEVEL').filter({ hasText: 'changed' }).waitFor(WAIT);
    await change('GREETING').filter({ hasText: 'added' }).waitFor(WAIT);
    assert.equal(await bulk.getByTestId('env-change').count(), 6);
    await shot(page, 'app-env-bulk-preview');
    await axe(page, 'env bulk preview');
    await bulk.getByRole('button', { name: 'Apply 6 changes' }).click();
    await bulk.waitFor({ state: 'detached', ...WAIT });

    const row = (key: string) =>
      page.getByTestId('env-row').filter({ has: page.locator('td', { hasText: new RegExp(`^${key}$`) }) });
    await row('GREETING')
      .getByTestId('env-value')
      .filter({ hasText: MARKUP(9) })
      .waitFor(WAIT);
    assert.equal(await row('LOG_LEVEL').getByTestId('env-value').textContent(), 'debug');
    assert.equal(await row('SINGLE').getByTestId('env-value').textContent(), 'a $literal # not a comment');
    assert.equal(await row('PLAIN').getByTestId('env-value').textContent(), 'value');
    await assertNoInjectedMarkup(page);
    assert.equal(puts.length, 1, 'one PUT applies the paste');

    // What the API stored is exactly what was pasted.
    const env = await c.req('GET', `/api/apps/${app!.id}/env`);
    const byKey = Object.fromEntries(env.body.items.map((v: any) => [v.key, v.value]));
    assert.deepEqual(byKey, {
      LOG_LEVEL: 'debug',
      GREETING: MARKUP(9),
      SINGLE: 'a $literal # not a comment',
      PLAIN: 'value',
      MULTI: 'line one\nline two',
      API_TOKEN: 'tok-never-listed',
    });

    // A secret pasted as such is listed redacted; Reveal shows it.
    await page.getByRole('button', { name: 'Paste .env' }).click();
    await bulk.getByLabel('.env content').fill('DB_PASSWORD=pw-never-listed\n');
    await bulk.getByRole('button', { name: 'Apply 1 change' }).click();
    await row('DB_PASSWORD').waitFor(WAIT);
    assert.equal(await page.getByText('pw-never-listed').count(), 0, 'a secret is not listed');
    // Reveal needs a step-up: the dialog asks for the password, then the reveal is retried.
    await row('DB_PASSWORD').getByRole('button', { name: 'Reveal DB_PASSWORD' }).click();
    const dialog = page.getByRole('dialog', { name: 'Confirm it is you' });
    await dialog.waitFor(WAIT);
    assert.equal(
      await page.getByText('pw-never-listed').count(),
      0,
      'nothing is revealed before the step-up',
    );
    await dialog.getByLabel('Password').fill(ADMIN.password);
    await dialog.getByRole('button', { name: 'Verify' }).click();
    await row('DB_PASSWORD').getByTestId('env-value').filter({ hasText: 'pw-never-listed' }).waitFor(WAIT);
    // A step-up lasts five minutes: end it as if they had passed, so the shell test asks again.
    await s!.env.db.updateTable('sessions').set({ step_up_until: null }).execute();
    invalidateCredentials();
  });
});

test('a domain is added from the domains tab and listed with its status, certificate and DNS answer', async (t) => {
  if (!(await ready(t))) return;
  await withFailureShot(page, 'app-domains', async () => {
    await openTab('Domains');
    // The service has no port of its own (EXPOSE is not read as one): the API says so, shown as its message.
    await page.getByLabel('Hostname').fill(HOST);
    await page.getByRole('button', { name: 'Add domain' }).click();
    await page.getByRole('alert').filter({ hasText: 'has no port' }).waitFor(WAIT);
    await page.getByLabel('Port').fill('8080');
    await page.getByRole('button', { name: 'Add domain' }).click();
    const row = page.getByTestId('domain-row').filter({ hasText: HOST });
    await row.locator('.badge').waitFor(WAIT);
    const status = (await row.locator('.badge').textContent())!.trim();
    assert.ok(['awaiting dns', 'issuing', 'active', 'error'].includes(status), `status shown: ${status}`);
    // The check re-reads DNS (the lab's resolver answers 127.0.0.1, this host's public address).
    await row.getByRole('button', { name: `Check DNS and certificate of ${HOST}` }).click();
    await row.getByText('points here', { exact: true }).waitFor(WAIT);
    await row.getByText('127.0.0.1').waitFor(WAIT);
    // Through Pebble, the certificate is issued and the list follows by itself.
    await row.locator('.badge-active').waitFor(LONG);
    await row.getByText(/acme/).waitFor(WAIT);
    await shot(page, 'app-domains-active');
    await axe(page, 'domains with a domain');
    // A second one, deleted after a confirmation.
    const other = `old-${uniq()}.example.test`;
    await page.getByLabel('Hostname').fill(other);
    await page.getByRole('button', { name: 'Add domain' }).click();
    await page.getByTestId('domain-row').filter({ hasText: other }).waitFor(WAIT);
    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: `Delete ${other}` }).click();
    await page
      .getByTestId('domain-row')
      .filter({ hasText: other })
      .waitFor({ state: 'detached', ...WAIT });
    const listed = await c.req('GET', `/api/apps/${app!.id}/domains`);
    assert.deepEqual(
      listed.body.items.filter((d: any) => !d.managed).map((d: any) => d.hostname),
      [HOST],
    );
  });
});

test('request metrics: real requests through Caddy show up in the totals and the charts draw', async (t) => {
  if (!(await ready(t))) return;
  await withFailureShot(page, 'app-metrics', async () => {
    await poll(
      'the app answers through Caddy',
      async () => (await lab!.https(HOST, '/')).body.includes('hello from the app page'),
      90_000,
      250,
    );
    for (let i = 0; i < 5; i++) await lab!.https(HOST, '/');
    await lab!.https(HOST, '/missing-page');
    await openTab('Metrics');
    const totals = page.getByTestId('metrics-totals');
    await poll(
      'the requests are counted',
      async () => {
        const text = (await totals.textContent()) ?? '';
        const n = Number(/^(\d+) request/.exec(text)?.[1] ?? 0);
        if (n >= 6 && /[1-9]\d* 4xx/.test(text)) return true;
        await page.getByRole('button', { name: 'Refresh' }).click();
        return false;
      },
      90_000,
      1_000,
    );
    assert.equal(await page.getByTestId('metrics-chart').count(), 2);
    await page.getByTestId('metrics-chart').nth(0).locator('canvas').waitFor(WAIT);
    await page.getByTestId('metrics-chart').nth(1).locator('canvas').waitFor(WAIT);
    await page.getByRole('button', { name: '24h' }).click();
    await page.getByText('over 24h').waitFor(WAIT);
    await page.getByTestId('metrics-chart').first().locator('canvas').waitFor(WAIT);
    await shot(page, 'app-metrics-data');
  });
});

test('webhook & key: the URL and a secret shown once, a trigger, a deploy key copied and tested', async (t) => {
  if (!(await ready(t))) return;
  await withFailureShot(page, 'app-git', async () => {
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: s!.url });
    await openTab('Webhook & key');
    const url = (await page.getByTestId('webhook-url').textContent())!;
    assert.ok(url.includes(`/webhooks/${app!.id}`), `webhook URL shown: ${url}`);
    await page.getByRole('button', { name: 'Copy the webhook URL' }).click();
    await page
      .getByRole('button', { name: 'Copy the webhook URL' })
      .filter({ hasText: 'Copied' })
      .waitFor(WAIT);
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), url);

    await page.getByRole('button', { name: 'Generate secret' }).click();
    const secret = (await page.getByTestId('webhook-secret').locator('code').textContent())!.trim();
    assert.ok(secret.length >= 16, 'the secret is shown once');
    await page.getByTestId('webhook-secret').getByRole('button', { name: 'Done' }).click();
    assert.equal(await page.getByText(secret).count(), 0, 'and not again');
    await page.getByRole('button', { name: 'Regenerate secret' }).waitFor(WAIT);
    assert.equal((await c.req('GET', `/api/apps/${app!.id}/webhook`)).body.secret_set, true);

    await page.getByLabel('Branch or tag pattern').fill('release/*');
    await page.getByRole('button', { name: 'Add trigger' }).click();
    await page.getByTestId('trigger-row').filter({ hasText: 'release/*' }).waitFor(WAIT);

    await page.getByRole('button', { name: 'Generate key' }).click();
    const key = (await page.getByTestId('deploy-key').textContent({ timeout: 60_000 }))!.trim();
    assert.match(key, /^ssh-ed25519 AAAA/);
    await page.getByRole('button', { name: 'Copy the public key' }).click();
    await page
      .getByRole('button', { name: 'Copy the public key' })
      .filter({ hasText: 'Copied' })
      .waitFor(WAIT);
    assert.equal((await page.evaluate(() => navigator.clipboard.readText())).trim(), key);
    await page.getByRole('button', { name: 'Test connection' }).click();
    await page
      .getByTestId('deploy-key-test')
      .filter({ hasText: /^(Connected|Failed): .+/ })
      .waitFor(WAIT);
    await shot(page, 'app-git-filled');
    await axe(page, 'webhook & key filled');
  });
});

test('the shell tab opens a terminal in the running container after a step-up', async (t) => {
  if (!(await ready(t))) return;
  await withFailureShot(page, 'app-shell', async () => {
    await openTab('Shell');
    await page.getByRole('button', { name: 'Connect' }).click();
    // The upgrade is refused without a recent step-up: the dialog asks, then the tab retries.
    const dialog = page.getByRole('dialog', { name: 'Confirm it is you' });
    await dialog.waitFor(WAIT);
    await dialog.getByLabel('Password').fill(ADMIN.password);
    await dialog.getByRole('button', { name: 'Verify' }).click();
    await page.getByRole('status').filter({ hasText: 'Connected' }).waitFor(WAIT);
    await page.getByTestId('terminal').click();
    await page.keyboard.type('echo shell-$((6*7))\n');
    await poll(
      'the command runs in the container',
      async () => ((await page.getByTestId('terminal').textContent()) ?? '').includes('shell-42'),
      60_000,
      200,
    );
    // xterm's own styles (colours, cell sizes) apply despite the CSP's `style-src 'self'`:
    // its default white foreground, not the page's text colour.
    assert.equal(
      await page.locator('.xterm-rows').evaluate((el) => getComputedStyle(el).color),
      'rgb(255, 255, 255)',
    );
    await shot(page, 'app-shell-connected');
    await page.getByRole('button', { name: 'Disconnect' }).click();
    await page.getByRole('button', { name: 'Connect' }).waitFor(WAIT);
  });
});

test('databases and backups: a Redis database from the catalog, a backup run, downloaded, restored, then both deleted', async (t) => {
  if (!(await ready(t))) return;
  if (!(await needDbImages(t))) return;
  await withFailureShot(page, 'app-data', async () => {
    await openTab('Databases');
    await page.getByLabel('Engine').selectOption('redis');
    await page.getByRole('button', { name: 'Create database' }).click();
    const db = page.getByTestId('database-row').filter({ hasText: 'redis' });
    await db.locator('.badge-ready').waitFor(LONG);
    await db.getByText('REDIS_URL').waitFor(WAIT);
    const env = await c.req('GET', `/api/apps/${app!.id}/env`);
    assert.ok(
      env.body.items.some((v: any) => v.key === 'REDIS_URL' && v.secret === true),
      'the connection URL is a secret variable',
    );
    await shot(page, 'app-databases-redis');
    await axe(page, 'databases with one');

    await openTab('Backups');
    await page.getByLabel('Database', { exact: true }).selectOption({ index: 0 });
    await page.getByRole('button', { name: 'Add backup' }).click();
    const config = page.getByTestId('backup-config').filter({ hasText: 'redis' });
    await config.waitFor(WAIT);
    await config.getByRole('button', { name: 'Run now' }).click();
    const run = config.getByTestId('backup-run').first();
    await run.locator('.badge-succeeded').waitFor(LONG);
    // The download link works with the session cookie alone.
    const href = (await run.getByRole('link', { name: 'Download' }).getAttribute('href'))!;
    const got = await page.evaluate(
      (h) => fetch(h).then(async (r) => ({ status: r.status, size: (await r.arrayBuffer()).byteLength })),
      href,
    );
    assert.equal(got.status, 200);
    assert.ok(got.size > 0, 'the artifact has bytes');
    // Restore: a confirmation, then the step-up the API asks for; its progress is shown.
    page.once('dialog', (d) => void d.accept());
    await run.getByRole('button', { name: 'Restore' }).click();
    await withStepUp(config.getByTestId('restore-status'));
    await config.getByTestId('restore-status').locator('.badge-succeeded').waitFor(LONG);
    await shot(page, 'app-backups-restored');
    await axe(page, 'backups with a run');

    page.once('dialog', (d) => void d.accept());
    await config.getByRole('button', { name: /^Delete the backup of database redis/ }).click();
    await withStepUp(page.getByText('No backups configured.'));

    await openTab('Databases');
    page.once('dialog', (d) => void d.accept());
    await db.getByRole('button', { name: /^Delete the redis database/ }).click();
    await withStepUp(page.getByText('No databases.'));
    assert.deepEqual((await c.req('GET', `/api/apps/${app!.id}/databases`)).body.items, []);
  });
});
