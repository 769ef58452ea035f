// The Jobs tab, the "Run a command" dialog and the release command setting, in Debian's chromium
// against the real control plane and engine: a job added through the form shows its schedule in
// words and its next run, a bad schedule is refused next to its field, run now shows the run's
// status, duration and output in the history; a command asks for the step-up, then shows its
// output live and its exit code; the release command is saved from the overview. Checked with axe.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { startTestServer, adminClient, ADMIN, type TestServer, type Client } from '../_support/server.js';
import { needChromium, launchChromium, withFailureShot, CHROMIUM, axe } from '../_support/browser.js';
import { dockerReachable, ensureBaseImage, needDocker, BASE_IMAGE } from '../_support/docker.js';
import { cleanupApp, waitStatus } from '../engine/_deploy.js';

const WAIT = { timeout: 90_000 };
let s: TestServer | undefined;
let browser: Browser | undefined;
let page: Page;
let c: Client;
const NAME = `jobs-page-${process.pid}`;

before(async () => {
  if (!existsSync(CHROMIUM) || !(await dockerReachable())) return;
  await ensureBaseImage();
  s = await startTestServer();
  c = await adminClient(s);
  browser = await launchChromium();
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.addCookies([...c.cookies].map(([name, value]) => ({ name, value, url: s!.url })));
  page = await context.newPage();
});

after(async () => {
  await browser?.close();
  if (s) await cleanupApp(s.env.engine, NAME);
  await s?.stop();
});

async function deployedApp(): Promise<string> {
  const compose = `services:\n  app:\n    image: ${BASE_IMAGE}\n    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 100000 & wait"]\n`;
  const r = await c.req('POST', '/api/apps', { name: NAME, source: { type: 'compose', compose } });
  assert.equal(r.status, 201, r.text);
  const d = await c.req('POST', `/api/apps/${r.body.app.id}/deployments`, {});
  assert.equal(d.status, 202, d.text);
  await waitStatus(c, r.body.app.id, d.body.deployment.id, ['succeeded']);
  return r.body.app.id;
}

test('jobs tab: add a job, see it in words, run it now with its output; run a command with live output; set the release command', async (t) => {
  if (!(await needChromium(t)) || !(await needDocker(t))) return;
  const id = await deployedApp();
  await withFailureShot(page, 'jobs-tab', async () => {
    await page.goto(`${s!.url}/apps/${encodeURIComponent(id)}?tab=jobs`);
    await page.getByText('No jobs.').waitFor(WAIT);
    await page.getByRole('button', { name: 'New job' }).click();
    const form = page.getByRole('group', { name: 'New job' });
    await form.getByLabel('Name').fill('hello');
    await form.getByLabel('Schedule').fill('*/5 * * * * *');
    await form.getByLabel('Command').fill('sh\n-c\necho hello from the job');
    await form.getByRole('button', { name: 'Add job' }).click();
    const schedule = form.getByLabel('Schedule');
    await page.waitForFunction(
      () => document.querySelector('#job-schedule')?.getAttribute('aria-invalid') === 'true',
      null,
      WAIT,
    );
    assert.match((await page.locator('#job-schedule-err').textContent()) ?? '', /5 fields/);
    await schedule.fill('*/5 * * * *');
    await form.getByRole('button', { name: 'Add job' }).click();
    const row = page.getByTestId('job-row').filter({ hasText: 'hello' });
    await row.getByText('every 5 minutes (UTC)').waitFor(WAIT);
    assert.ok((await row.locator('time').count()) >= 1, 'its next run');
    await axe(page, 'jobs tab with a job');

    await row.getByRole('button', { name: 'Run now' }).click();
    const run = page.getByTestId('run-row').first();
    await run.locator('.badge-succeeded').waitFor(WAIT);
    assert.match((await run.textContent()) ?? '', /manual/);
    assert.match((await run.textContent()) ?? '', /\d+(\.\d)? (ms|s)/, 'its duration');
    await run.getByRole('button', { name: 'Output' }).click();
    await page
      .getByRole('log', { name: 'Run output' })
      .getByText('hello from the job', { exact: true })
      .waitFor(WAIT);

    await page.getByRole('button', { name: 'Run a command…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Run a command' });
    await dialog.getByLabel('Command').fill('sh\n-c\necho one; sleep 1; echo two; exit 3');
    await dialog.getByRole('button', { name: 'Run', exact: true }).click();
    const stepUp = page.getByRole('dialog', { name: 'Confirm it is you' });
    await stepUp.waitFor(WAIT);
    await stepUp.getByLabel('Password').fill(ADMIN.password);
    await stepUp.getByRole('button', { name: 'Verify' }).click();
    const out = dialog.getByRole('log', { name: 'Command output' });
    await out.getByText('two', { exact: true }).waitFor(WAIT);
    await dialog.getByText('exit code 3').waitFor(WAIT);
    assert.equal(await out.getByText('one', { exact: true }).count(), 1);
    await axe(page, 'run a command dialog');
    await dialog.getByRole('button', { name: 'Close' }).click();

    await page.getByRole('tab', { name: 'Overview' }).click();
    const release = page.getByRole('region', { name: 'Release command' }).getByLabel('Command');
    await release.waitFor(WAIT);
    await release.fill('sh\n-c\necho migrating');
    await page.getByRole('button', { name: 'Save release command' }).click();
    await page
      .getByRole('region', { name: 'Release command' })
      .getByRole('status')
      .filter({ hasText: 'Saved.' })
      .waitFor(WAIT);
    const app = (await c.req('GET', `/api/apps/${id}`)).body.app;
    assert.deepEqual(app.release_command, ['sh', '-c', 'echo migrating']);
  });
});
