// The observing parts of the dashboard in Debian's chromium against the real control plane: the
// Alerts page (the default rules, a new rule made with the form, its state once it fires and the
// history), CPU and memory charts on an app's Metrics tab from its resource history, and the log
// drains on the instance page with their delivery state and dropped lines. axe on each.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { startTestServer, adminClient, ADMIN, type TestServer, type Client } from '../_support/server.js';
import { needChromium, launchChromium, shot, withFailureShot, CHROMIUM, axe } from '../_support/browser.js';
import { freePort } from '../_support/net.js';
import { poll } from '../_support/wait.js';
import { addResourceSamples } from '#lib/series/resource-store.js';

const WAIT = { timeout: 60_000 };
let s: TestServer | undefined;
let c: Client;
let browser: Browser | undefined;
let page: Page;

before(async () => {
  if (!existsSync(CHROMIUM)) return;
  s = await startTestServer({ SVC_NOTIFY_ALLOW: '127.0.0.1', SVC_DRAIN_BUFFER: '100' });
  c = await adminClient(s);
  browser = await launchChromium();
  page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  page.on('dialog', (d) => void d.accept());
});
after(async () => {
  await browser?.close();
  await s?.stop();
});

async function signIn(): Promise<void> {
  await page.goto(s!.url + '/');
  await page.getByLabel('Username').fill(ADMIN.username);
  await page.getByLabel('Password').fill(ADMIN.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor(WAIT);
}

test('the Alerts page: default rules, a rule added with the form, its firing state and history', async (t) => {
  if (!(await needChromium(t))) return;
  await withFailureShot(page, 'alerts', async () => {
    await signIn();
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Alerts' }).click();
    await page.getByRole('heading', { level: 1, name: 'Alerts' }).waitFor(WAIT);
    const rules = page.getByTestId('alert-rule');
    await rules.first().waitFor(WAIT);
    assert.equal(await rules.count(), 3);
    assert.match(await page.getByTestId('alert-rules').innerText(), /Disk over 90%/);
    await page.getByLabel('Name').fill('Disk in use');
    await page.getByLabel('Metric').selectOption('disk_percent');
    await page.getByLabel('Threshold').fill('0');
    await page.getByLabel('For (seconds)').fill('0');
    await page.getByRole('button', { name: 'Add rule' }).click();
    await page
      .getByTestId('alert-rules')
      .getByRole('cell', { name: 'Disk in use', exact: true })
      .waitFor(WAIT);
    // Any disk in use is more than 0%: the evaluation (the creation asks for one) fires the rule.
    await s!.env.vitals.sample();
    await s!.env.alerts.evaluator.evaluate();
    await page.reload();
    const row = page.getByTestId('alert-rule').filter({ hasText: 'Disk in use' });
    await row.getByText('firing').waitFor(WAIT);
    await page.getByTestId('alert-history').getByText('fired').first().waitFor(WAIT);
    await axe(page, 'alerts');
    await shot(page, 'observe-alerts');
    await row.getByRole('button', { name: 'Disable Disk in use' }).click();
    await row.getByText('disabled').waitFor(WAIT);
  });
});

test("an app's Metrics tab draws its CPU and memory from the resource history", async (t) => {
  if (!(await needChromium(t))) return;
  await withFailureShot(page, 'resources', async () => {
    const app = (
      await c.req('POST', '/api/apps', { name: 'charts', source: { type: 'image', image: 'nginx:alpine' } })
    ).body.app;
    const now = Date.now();
    addResourceSamples(
      s!.env.db,
      Array.from({ length: 20 }, (_, i) => ({
        appId: app.id,
        service: 'web',
        at: now - (20 - i) * 60_000,
        cpuPercent: 10 + i,
        memoryBytes: (50 + i) * 1048576,
        memoryLimitBytes: 512 * 1048576,
        restarts: i === 5 ? 1 : 0,
      })),
    );
    await page.goto(`${s!.url}/apps/${app.id}?tab=metrics`);
    await page.getByRole('heading', { name: 'CPU and memory' }).waitFor(WAIT);
    await page.getByTestId('resource-chart').nth(1).locator('canvas').waitFor(WAIT);
    assert.equal(await page.getByTestId('resource-chart').count(), 2);
    assert.match(await page.getByTestId('resources').innerText(), /CPU \(% of one core\)[\s\S]*Memory/);
    assert.match(await page.getByTestId('resources-summary').innerText(), /1 restart over the range/);
    await axe(page, 'metrics resources');
    await shot(page, 'observe-resources');
  });
});

test('the instance page shows each drain with its delivery state and the lines it dropped', async (t) => {
  if (!(await needChromium(t))) return;
  await withFailureShot(page, 'drains', async () => {
    const app = (await c.req('GET', '/api/apps')).body.items[0];
    const dead = await freePort();
    const made = await c.req('POST', '/api/log-drains', {
      name: 'nowhere',
      kind: 'http_json',
      url: `http://127.0.0.1:${dead}/logs`,
      app_ids: [app.id],
    });
    assert.equal(made.status, 201, made.text);
    for (let i = 0; i < 500; i++)
      s!.env.drains.offer({
        at: Date.now(),
        appId: app.id,
        app: app.name,
        service: 'web',
        container: 'c',
        stream: 'stdout',
        source: 'container',
        line: `l ${i}`,
      });
    await poll(
      'failing',
      async () => (await c.req('GET', `/api/log-drains/${made.body.drain.id}`)).body.state === 'failing',
      30_000,
      100,
    );
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Instance' }).click();
    await page.getByRole('heading', { name: 'Log drains' }).waitFor(WAIT);
    const drain = page.getByTestId('drain').filter({ hasText: 'nowhere' });
    await drain.getByText('failing').waitFor(WAIT);
    assert.match(await drain.getByTestId('drain-counts').innerText(), /0 delivered, 400 dropped/);
    await drain.getByRole('button', { name: 'Send a test line to nowhere' }).click();
    await drain.getByText(/Test failed/).waitFor(WAIT);
    await axe(page, 'instance drains');
    await shot(page, 'observe-drains');
  });
});
