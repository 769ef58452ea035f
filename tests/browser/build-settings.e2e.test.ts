// Builds from source in the dashboard, in Debian's chromium against the real control plane and the
// git server fixture: the new-app flow shows the detected plan before anything is built; the Build
// tab saves the build type and limits (a reload and the API show them) and puts the API's refusal
// next to its field; a repository with nothing recognisable says what was looked for and takes a
// stack from there; one with its own Dockerfile says so. With the engine, Deploy from the plan and
// the deployment log shows the plan under a "Build plan" heading.
// The tests run in order and share one browser page (the operator's session).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import type { Browser, Locator, Page } from 'playwright-core';
import { startTestServer, adminClient, type TestServer, type Client } from '../_support/server.js';
import { needChromium, launchChromium, shot, withFailureShot, CHROMIUM, axe } from '../_support/browser.js';
import { dockerReachable } from '../_support/docker.js';
import { startGitServer, cleanupApp, waitStatus, type GitServer } from '../engine/_deploy.js';
import { ensureStackImages, needStackImages, stackImageMap } from '../_support/stackimages.js';
import { poll as pollFor } from '../_support/wait.js';

const WAIT = { timeout: 60_000 };

let s: TestServer | undefined;
let git: GitServer | undefined;
let browser: Browser | undefined;
let page: Page;
let c: Client;
let engine = false;
const names = new Set<string>();
const uniq = () => randomBytes(3).toString('hex');
/** The git app the new-app flow created from a plain repository (a static site). */
let site: { id: string; name: string } | undefined;

before(async () => {
  if (!existsSync(CHROMIUM)) return;
  // The plan needs only a clone; the engine (with local stand-ins for the runtime images) only
  // for the one test that deploys.
  engine = await dockerReachable();
  // Without the stand-ins (no root to build them), the deploying test skips through needStackImages.
  const images = engine ? await ensureStackImages().catch(() => null) : null;
  const map = images ? stackImageMap(images) : {};
  git = await startGitServer();
  s = await startTestServer({ SVC_IMAGE_MAP: JSON.stringify(map) });
  s.env.deployments.opts.healthTimeoutMs = 60_000;
  s.env.deployments.opts.settleMs = 1_500;
  c = await adminClient(s);
  browser = await launchChromium();
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.addCookies([...c.cookies].map(([name, value]) => ({ name, value, url: s!.url })));
  page = await context.newPage();
});

after(async () => {
  await browser?.close();
  if (s) {
    if (engine) for (const n of names) await cleanupApp(s.env.engine, n);
    await s.stop();
  }
  await git?.stop();
});

async function openTab(label: string): Promise<void> {
  await page.getByRole('tab', { name: label, exact: true }).click();
  await page.getByRole('tab', { name: label, exact: true, selected: true }).waitFor(WAIT);
}

/** The text the input's aria-describedby points at: its hint and, after a refusal, the error. */
async function description(input: Locator): Promise<string> {
  return input.evaluate((el) =>
    (el.getAttribute('aria-describedby') ?? '')
      .split(' ')
      .map((id) => document.getElementById(id)?.textContent ?? '')
      .join(' | '),
  );
}

/** Waits for the API to show what a save in the page stored. */
const poll = (ok: () => Promise<boolean>) => pollFor('the API shows the change', ok, 30_000, 100);

async function apiApp(id: string): Promise<any> {
  const r = await c.req('GET', `/api/apps/${id}`);
  assert.equal(r.status, 200, r.text);
  return r.body.app;
}

async function createApi(
  prefix: string,
  files: Record<string, string>,
): Promise<{ id: string; name: string }> {
  const repo = `${prefix}-${uniq()}`;
  await git!.commit(repo, files, 'first');
  const name = `${prefix}-${uniq()}`;
  names.add(name);
  const r = await c.req('POST', '/api/apps', {
    name,
    source: { type: 'git', repo_url: git!.url(repo), branch: 'main' },
  });
  assert.equal(r.status, 201, r.text);
  return r.body.app;
}

test('the new-app flow shows the detected plan of a plain repository before the first deploy', async (t) => {
  if (!(await needChromium(t))) return;
  await withFailureShot(page, 'build-new-app-plan', async () => {
    const repo = `plain-${uniq()}`;
    await git!.commit(
      repo,
      { 'index.html': '<h1>plain site</h1>\n', 'about.html': 'about\n' },
      'a plain site',
    );
    const name = `plain-${uniq()}`;
    names.add(name);
    await page.goto(`${s!.url}/`);
    await page.getByLabel('Name', { exact: true }).fill(name);
    await page.getByLabel('Repository URL').fill(git!.url(repo));
    await page.getByLabel('Branch').fill('main');
    await page.getByRole('button', { name: 'Create app' }).click();
    await page.getByRole('heading', { name }).waitFor(WAIT);
    const id = decodeURIComponent(/\/apps\/([^/?]+)/.exec(page.url())![1]!);
    site = { id, name };

    const first = page.getByTestId('first-deploy');
    await first.getByRole('heading', { name: 'Before the first deploy' }).waitFor(WAIT);
    const plan = first.getByTestId('build-plan');
    await plan.waitFor(WAIT);
    assert.equal(await plan.getByTestId('plan-stack').textContent(), 'static');
    assert.equal(await plan.getByTestId('plan-detected-from').textContent(), 'index.html');
    assert.equal(await plan.getByTestId('plan-port').textContent(), '8080');
    await plan.getByText('caddy:2-alpine').first().waitFor(WAIT);
    // The Dockerfile is folded away until asked for, then shown as the API gave it.
    const dockerfile = plan.getByTestId('plan-dockerfile');
    assert.equal(await dockerfile.isVisible(), false);
    await plan.getByText('Generated Dockerfile', { exact: true }).click();
    await dockerfile.waitFor({ state: 'visible', ...WAIT });
    const api = await c.req('GET', `/api/apps/${id}/build-plan`);
    assert.equal(api.status, 200, api.text);
    assert.equal(await dockerfile.textContent(), api.body.dockerfile);
    assert.match(api.body.dockerfile, /^FROM caddy:2-alpine AS site$/m);
    await first.getByRole('button', { name: 'Deploy main' }).waitFor(WAIT);
    // Nothing was built to show it.
    assert.deepEqual((await c.req('GET', `/api/apps/${id}/deployments`)).body.items, []);
    await axe(page, 'new app: the plan before the first deploy');
    await shot(page, 'build-new-app-plan');
  });
});

test('Deploy from the plan: the deployment log shows the plan under a "Build plan" heading', async (t) => {
  if (!(await needChromium(t)) || !(await needStackImages(t))) return;
  assert.ok(site, 'the new-app test created the app');
  await withFailureShot(page, 'build-deploy-plan-log', async () => {
    await page.getByTestId('first-deploy').getByRole('button', { name: 'Deploy main' }).click();
    const row = page.getByTestId('deployment-row').first();
    await row.waitFor(WAIT);
    // Once deployed, the page no longer offers the first-deploy plan.
    await page.getByTestId('first-deploy').waitFor({ state: 'detached', ...WAIT });
    const deps = (await c.req('GET', `/api/apps/${site!.id}/deployments`)).body.items;
    assert.equal(deps.length, 1);
    await waitStatus(c, site!.id, deps[0].id, ['succeeded']);
    const log = page.getByRole('log', { name: 'Build log' });
    // The view follows the end of the log; the plan is at its start.
    await page.getByRole('button', { name: 'Pause' }).click();
    await log.evaluate((el) => (el.scrollTop = 0));
    const head = log.getByRole('heading', { name: 'Build plan' });
    await head.waitFor(WAIT);
    await log
      .locator('.log-plan')
      .filter({ hasText: 'build plan (detected): stack static, from index.html' })
      .waitFor(WAIT);
    await log.locator('.log-plan').filter({ hasText: 'FROM caddy:2-alpine' }).first().waitFor(WAIT);
    // The heading comes right before the first plan line, and is not counted as a log line.
    const order = await log.evaluate((el) =>
      [...el.querySelectorAll('.logline')].map((l) =>
        l.classList.contains('log-plan-head') ? 'HEAD' : l.className.replace('logline ', ''),
      ),
    );
    const h = order.indexOf('HEAD');
    assert.ok(h >= 0 && order[h + 1] === 'log-plan', order.join(','));
    assert.ok(!order.slice(0, h).includes('log-plan'), 'no plan line before the heading');
    await axe(page, 'deployment log with a plan');
    await shot(page, 'build-deploy-plan-log');
  });
});

test('the Build tab saves the build type and the limits; a reload shows them and the API returns them', async (t) => {
  if (!(await needChromium(t))) return;
  assert.ok(site, 'the new-app test created the app');
  await withFailureShot(page, 'build-settings-saved', async () => {
    await page.goto(`${s!.url}/apps/${encodeURIComponent(site!.id)}?tab=build`);
    await page.getByRole('heading', { name: 'Build settings' }).waitFor(WAIT);
    assert.equal(await page.getByLabel('Build type').inputValue(), '', 'unset: the default');
    await page.getByLabel('Build type').selectOption('stack');
    await page.getByLabel('Stack', { exact: true }).selectOption('static');
    await page.getByLabel('Port', { exact: true }).fill('8081');
    // Until saved, the preview says it shows the saved settings.
    await page.getByText('the preview uses the saved ones').waitFor(WAIT);
    await page.getByRole('button', { name: 'Save build settings' }).click();
    const settingsCard = page.locator('section', {
      has: page.getByRole('heading', { name: 'Build settings' }),
    });
    await settingsCard.getByRole('status').filter({ hasText: 'Saved.' }).waitFor(WAIT);
    await page.getByText('the preview uses the saved ones').waitFor({ state: 'detached', ...WAIT });

    await page.getByLabel('Memory (MB)').fill('512');
    await page.getByLabel('CPUs').fill('1.5');
    await page.getByLabel('Time limit (s)').fill('600');
    await page.getByRole('button', { name: 'Save build limits' }).click();
    const limitsCard = page.locator('section', { has: page.getByRole('heading', { name: 'Build limits' }) });
    await limitsCard.getByRole('status').filter({ hasText: 'Saved.' }).waitFor(WAIT);

    const a = await apiApp(site!.id);
    assert.deepEqual(a.source.build, { type: 'stack', stack: 'static', port: 8081 });
    assert.deepEqual(a.build_limits, { memory_mb: 512, cpus: 1.5, timeout_s: 600 });

    await page.reload();
    await page.getByRole('heading', { name: 'Build settings' }).waitFor(WAIT);
    assert.equal(await page.getByLabel('Build type').inputValue(), 'stack');
    assert.equal(await page.getByLabel('Stack', { exact: true }).inputValue(), 'static');
    assert.equal(await page.getByLabel('Port', { exact: true }).inputValue(), '8081');
    assert.equal(await page.getByLabel('Memory (MB)').inputValue(), '512');
    assert.equal(await page.getByLabel('CPUs').inputValue(), '1.5');
    assert.equal(await page.getByLabel('Time limit (s)').inputValue(), '600');
    // The contract's ranges are shown with their fields.
    assert.match(await description(page.getByLabel('Memory (MB)')), /64\.\.65536/);
    assert.match(await description(page.getByLabel('Time limit (s)')), /10\.\.7200/);

    // The preview is the plan of the saved settings.
    await page.getByRole('button', { name: 'Preview plan' }).click();
    const plan = page.getByTestId('build-plan');
    await plan.waitFor(WAIT);
    assert.equal(await plan.getByTestId('plan-port').textContent(), '8081');
    await axe(page, 'build tab with settings');
    await shot(page, 'build-settings-saved');

    // Back to the default: the setting is removed, not stored as an empty object.
    await page.getByLabel('Build type').selectOption('');
    await page.getByRole('button', { name: 'Save build settings' }).click();
    await poll(async () => (await apiApp(site!.id)).source.build === undefined);
    await page.getByLabel('Memory (MB)').fill('');
    await page.getByLabel('CPUs').fill('');
    await page.getByLabel('Time limit (s)').fill('');
    await page.getByRole('button', { name: 'Save build limits' }).click();
    await limitsCard.getByRole('status').filter({ hasText: 'Saved.' }).waitFor(WAIT);
    assert.equal((await apiApp(site!.id)).build_limits, null);
  });
});

test('a refused value is shown next to its field with the API’s words, and nothing is stored', async (t) => {
  if (!(await needChromium(t))) return;
  assert.ok(site, 'the new-app test created the app');
  await withFailureShot(page, 'build-settings-refused', async () => {
    await page.goto(`${s!.url}/apps/${encodeURIComponent(site!.id)}?tab=build`);
    await page.getByRole('heading', { name: 'Build limits' }).waitFor(WAIT);
    const memory = page.getByLabel('Memory (MB)');
    await memory.fill('32');
    await page.getByLabel('CPUs').fill('2');
    await page.getByRole('button', { name: 'Save build limits' }).click();
    const limitsCard = page.locator('section', { has: page.getByRole('heading', { name: 'Build limits' }) });
    await limitsCard.getByTestId('field-error').waitFor(WAIT);
    assert.equal(await memory.getAttribute('aria-invalid'), 'true');
    // The message is the API's own, for that field.
    const direct = await c.req('PATCH', `/api/apps/${site!.id}`, { build_limits: { memory_mb: 32 } });
    assert.equal(direct.status, 400);
    const apiMsg = direct.body.details.find((d: any) => d.field === 'build_limits.memory_mb').message;
    assert.ok(
      (await description(memory)).includes(apiMsg),
      `${await description(memory)} includes ${apiMsg}`,
    );
    assert.equal(
      await page.getByLabel('CPUs').getAttribute('aria-invalid'),
      null,
      'only the refused field is marked',
    );
    await limitsCard
      .getByRole('alert')
      .filter({ hasText: /^Not saved/ })
      .waitFor(WAIT);
    assert.equal((await apiApp(site!.id)).build_limits, null, 'nothing stored');

    // A start command that would continue onto the next Dockerfile line.
    await page.getByLabel('Build type').selectOption('stack');
    await page.getByLabel('Stack', { exact: true }).selectOption('node');
    const start = page.getByLabel('Start command');
    await start.fill('node server.js \\');
    await page.getByRole('button', { name: 'Save build settings' }).click();
    const settings = page.locator('section', { has: page.getByRole('heading', { name: 'Build settings' }) });
    await settings.getByTestId('field-error').waitFor(WAIT);
    assert.equal(await start.getAttribute('aria-invalid'), 'true');
    assert.match(await description(start), /start .*backslash/i);
    assert.equal((await apiApp(site!.id)).source.build, undefined, 'nothing stored');
    await axe(page, 'build tab with refused values');
    await shot(page, 'build-settings-refused');
  });
});

test('nothing recognisable: the new app says what was looked for and takes a stack from there', async (t) => {
  if (!(await needChromium(t))) return;
  await withFailureShot(page, 'build-not-detectable', async () => {
    // A site whose pages are not where detection looks: it takes an operator's word.
    const app = await createApi('words', { 'README.md': 'just words\n', 'site/index.html': 'in a folder\n' });
    await page.goto(`${s!.url}/apps/${encodeURIComponent(app.id)}`);
    const first = page.getByTestId('first-deploy');
    const nd = first.getByTestId('plan-not-detectable');
    await nd.waitFor(WAIT);
    await nd.getByText('Nothing recognisable', { exact: true }).waitFor(WAIT);
    const looked = (await nd.locator('p', { hasText: 'Looked for:' }).textContent())!;
    for (const f of ['package.json', 'go.mod', 'requirements.txt', 'composer.json', 'Gemfile', 'index.html'])
      assert.ok(looked.includes(f), `${looked} names ${f}`);
    assert.equal(await first.getByRole('button', { name: /^Deploy/ }).count(), 0, 'no deploy of nothing');
    await axe(page, 'not detectable');
    await shot(page, 'build-not-detectable');

    // A stack set from here is saved on the app and the plan is read again with it.
    await nd.getByLabel('Build it as').selectOption('static');
    await nd.getByRole('button', { name: 'Set this stack' }).click();
    await first
      .getByTestId('plan-not-detectable')
      .getByText('stack static: none of index.html')
      .waitFor(WAIT);
    assert.deepEqual((await apiApp(app.id)).source.build, { type: 'stack', stack: 'static' });

    // The folder is given under Build; the first-deploy plan follows.
    await openTab('Build');
    assert.equal(await page.getByLabel('Build type').inputValue(), 'stack');
    await page.getByLabel('Publish directory').fill('site');
    await page.getByRole('button', { name: 'Save build settings' }).click();
    await poll(async () => (await apiApp(app.id)).source.build?.publish_dir === 'site');
    await openTab('Overview');
    await first.getByTestId('plan-detected-from').filter({ hasText: 'site/index.html' }).waitFor(WAIT);
    await first.getByRole('button', { name: 'Deploy main' }).waitFor(WAIT);
  });
});

test('a repository with its own Dockerfile: the plan says it is built as it is', async (t) => {
  if (!(await needChromium(t))) return;
  await withFailureShot(page, 'build-own-dockerfile', async () => {
    const app = await createApi('ownfile', { Dockerfile: 'FROM scratch\nCOPY x /x\n', x: 'x\n' });
    await page.goto(`${s!.url}/apps/${encodeURIComponent(app.id)}`);
    const own = page.getByTestId('first-deploy').getByTestId('plan-own-build');
    await own.waitFor(WAIT);
    await own.getByText(/its Dockerfile Dockerfile/).waitFor(WAIT);
    await page.getByTestId('first-deploy').getByRole('button', { name: 'Deploy main' }).waitFor(WAIT);
    // The Build tab previews the same answer.
    await openTab('Build');
    await page.getByRole('button', { name: 'Preview plan' }).click();
    await page.getByTestId('plan-own-build').waitFor(WAIT);
    await axe(page, 'own Dockerfile');
  });
});

test('an app that runs an image has no Build tab, nor a webhook (pushes deploy git apps only)', async (t) => {
  if (!(await needChromium(t))) return;
  const name = `img-${uniq()}`;
  const r = await c.req('POST', '/api/apps', { name, source: { type: 'image', image: 'nginx:1.27' } });
  assert.equal(r.status, 201, r.text);
  await page.goto(`${s!.url}/apps/${encodeURIComponent(r.body.app.id)}`);
  await page.getByRole('tab', { name: 'Domains' }).waitFor(WAIT);
  assert.equal(await page.getByRole('tab', { name: 'Build', exact: true }).count(), 0);
  assert.equal(await page.getByRole('tab', { name: 'Webhook & key' }).count(), 0);
  assert.equal(await page.getByTestId('first-deploy').count(), 0);
});
