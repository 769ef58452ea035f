// The audit page end to end in Debian's chromium against the real control plane: first run and
// sign-in, an env change made through the API, its diff on the page (the secret masked), a revert
// confirmed in a dialog, a conflict answered with a forced revert, filters, and a long list that
// stays virtualised. The API confirms what the page did.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { startTestServer, setupToken, Client, reveal, type TestServer } from '../_support/server.js';
import { needChromium, launchChromium, shot, withFailureShot, CHROMIUM, axe } from '../_support/browser.js';
import { poll } from '../_support/wait.js';

const OPERATOR = { username: 'auditor', password: 'a long enough passphrase 43' };
const WAIT = { timeout: 60_000 };
const SECRET_BEFORE = 'sk_before_' + randomBytes(6).toString('hex');
const SECRET_AFTER = 'sk_after_' + randomBytes(6).toString('hex');

let s: TestServer | undefined;
let browser: Browser | undefined;
let page: Page;
let api: Client;
let appId = '';
let appName = '';

before(async () => {
  if (!existsSync(CHROMIUM)) return;
  s = await startTestServer();
  browser = await launchChromium();
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  page = await context.newPage();
});

after(async () => {
  await browser?.close();
  await s?.stop();
});

async function ok(r: Promise<{ status: number; text: string; body: any }>, status = 200) {
  const x = await r;
  assert.equal(x.status, status, x.text);
  return x.body;
}

const envOf = async () =>
  Object.fromEntries(
    ((await ok(api.req('GET', `/api/apps/${appId}/env`))).items as any[]).map((i) => [i.key, i.value]),
  );

/** The newest entry of an action, by id. */
const newest = async (action: string) =>
  (await ok(api.req('GET', `/api/audit?action=${action}&limit=1`))).items[0].id as string;

async function openEntry(id: string) {
  await page.goto(s!.url + '/audit');
  await page.getByRole('heading', { name: 'Audit' }).waitFor(WAIT);
  await page
    .locator(`[data-testid="audit-row"][data-id="${id}"]`)
    .getByRole('button', { name: /^Changes of entry/ })
    .click();
  await page.getByRole('heading', { name: new RegExp(`^Entry ${id}:`) }).waitFor(WAIT);
  await page.getByTestId('audit-diff').waitFor(WAIT);
}

test('first run and sign in, then the API changes an env var (plain and secret)', async (t) => {
  if (!(await needChromium(t))) return;
  await withFailureShot(page, 'audit-first-run', async () => {
    await page.goto(s!.url + '/');
    await page.getByRole('heading', { name: 'Set up svc' }).waitFor(WAIT);
    await page.getByLabel('Setup token').fill(await setupToken(s!));
    await page.getByLabel('Username').fill(OPERATOR.username);
    await page.getByLabel('Password', { exact: true }).fill(OPERATOR.password);
    await page.getByLabel('Repeat password').fill(OPERATOR.password);
    await page.getByRole('button', { name: 'Create operator' }).click();
    await page.getByRole('button', { name: 'Skip for now' }).click(WAIT);
    await page.getByRole('heading', { name: 'Overview' }).waitFor(WAIT);
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor(WAIT);
    await axe(page, 'login');
    await page.getByLabel('Username').fill(OPERATOR.username);
    await page.getByLabel('Password').fill(OPERATOR.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Overview' }).waitFor(WAIT);

    api = new Client(s!.url);
    await ok(api.req('POST', '/api/auth/login', OPERATOR));
    appName = 'audit-ui-' + randomBytes(3).toString('hex');
    appId = (
      await ok(
        api.req('POST', '/api/apps', {
          name: appName,
          source: { type: 'image', image: 'nginx:1.27' },
        }),
        201,
      )
    ).app.id;
    await ok(
      api.req('PUT', `/api/apps/${appId}/env`, {
        items: [
          { key: 'GREETING', value: 'hello', secret: false },
          { key: 'API_KEY', value: SECRET_BEFORE, secret: true },
        ],
      }),
    );
    await ok(
      api.req('PUT', `/api/apps/${appId}/env`, {
        items: [
          { key: 'GREETING', value: 'goodbye', secret: false },
          { key: 'API_KEY', value: SECRET_AFTER, secret: true },
        ],
      }),
    );
  });
});

test('the audit page shows the diff with the secret masked and reverts after confirmation; the API sees the old values', async (t) => {
  if (!(await needChromium(t))) return;
  await withFailureShot(page, 'audit-revert', async () => {
    const id = await newest('app.env_replaced');
    await openEntry(id);
    const diff = page.getByTestId('audit-diff');
    const greeting = diff.getByRole('row').filter({ hasText: 'GREETING' });
    assert.deepEqual(
      (await greeting.getByRole('cell').allTextContents()).map((c) => c.trim()),
      ['GREETING', 'changed', 'hello', 'goodbye'],
    );
    const secretRow = diff.getByRole('row').filter({ hasText: 'API_KEY' });
    assert.deepEqual(
      (await secretRow.getByRole('cell').allTextContents()).map((c) => c.trim()),
      ['API_KEY', 'changed', 'secret', 'secret'],
    );
    const html = await page.content();
    assert.ok(!html.includes(SECRET_BEFORE) && !html.includes(SECRET_AFTER), 'no secret value on the page');
    await axe(page, 'audit with a diff');
    await shot(page, 'audit-01-diff');

    await page.getByRole('button', { name: 'Revert…' }).click();
    const dialog = page.getByRole('dialog', { name: `Revert entry ${id}?` });
    await dialog.waitFor(WAIT);
    await axe(page, 'audit revert dialog');
    await shot(page, 'audit-02-confirm');
    // Cancel first: nothing happens.
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden', ...WAIT });
    assert.equal((await envOf()).GREETING, 'goodbye');

    await page.getByRole('button', { name: 'Revert…' }).click();
    await dialog.getByRole('button', { name: 'Revert', exact: true }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /^Reverted: entry \d+ records the revert/ })
      .waitFor(WAIT);
    await shot(page, 'audit-03-reverted');
    assert.equal((await envOf()).GREETING, 'hello');
    assert.equal(
      (await ok(reveal(api, appId, 'API_KEY', OPERATOR))).value,
      SECRET_BEFORE,
      'the real secret came back',
    );
    const entry = (
      await ok(api.req('GET', `/api/audit?target=${appId}&action=app.env_replaced&limit=5`))
    ).items.find((i: any) => i.id === id);
    assert.ok(entry.reverted_at, 'the entry is marked reverted');
  });
});

test('a revert refused because the target changed since shows the message, and "Revert anyway" forces it', async (t) => {
  if (!(await needChromium(t))) return;
  await withFailureShot(page, 'audit-force', async () => {
    await ok(
      api.req('PUT', `/api/apps/${appId}/env`, {
        items: [
          { key: 'GREETING', value: 'hi', secret: false },
          { key: 'API_KEY', value: null },
        ],
      }),
    );
    const id = await newest('app.env_replaced');
    await ok(
      api.req('PUT', `/api/apps/${appId}/env`, {
        items: [
          { key: 'GREETING', value: 'later', secret: false },
          { key: 'API_KEY', value: null },
        ],
      }),
    );
    await openEntry(id);
    await page.getByRole('status').filter({ hasText: 'The target changed after this entry.' }).waitFor(WAIT);
    await page.getByRole('button', { name: 'Revert…' }).click();
    const dialog = page.getByRole('dialog', { name: `Revert entry ${id}?` });
    await dialog.getByRole('button', { name: 'Revert', exact: true }).click();
    const conflict = dialog.getByTestId('revert-conflict');
    await conflict.waitFor(WAIT);
    assert.match((await conflict.textContent())!, /changed after this entry/);
    assert.equal((await envOf()).GREETING, 'later', 'nothing applied on the conflict');
    await shot(page, 'audit-04-conflict');
    await dialog.getByRole('button', { name: 'Revert anyway' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /^Reverted: entry \d+/ })
      .waitFor(WAIT);
    assert.equal((await envOf()).GREETING, 'hello');
  });
});

test('filters narrow the list on the server, and a long list keeps only the rows in view in the page', async (t) => {
  if (!(await needChromium(t))) return;
  await withFailureShot(page, 'audit-virtual', async () => {
    const N = 240;
    for (let i = 0; i < N; i++)
      await ok(api.req('PUT', '/api/instance/deploy-concurrency', { concurrency: (i % 3) + 1 }));
    await page.goto(s!.url + '/audit');
    await page.getByLabel('Action').fill('PUT /api/instance/deploy');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByText(/^100 entries loaded/).waitFor(WAIT);
    const rows = page.getByTestId('audit-row');
    const inDom = await rows.count();
    assert.ok(inDom > 5 && inDom < 40, `only the rows in view are rendered (${inDom})`);
    const actions = rows.locator(':scope > span:nth-child(3)');
    for (let i = 0; i < (await actions.count()); i++)
      assert.equal(await actions.nth(i).getAttribute('title'), 'PUT /api/instance/deploy-concurrency');
    assert.match(
      (await actions.first().textContent())!,
      /deploy at once/,
      'the row says what happened in words',
    );
    // Scrolling to the end renders the last rows and fetches the next pages.
    const viewport = page.getByTestId('audit-viewport');
    await poll(
      'every entry loaded by scrolling',
      async () => {
        await viewport.evaluate((el) => el.scrollTo(0, el.scrollHeight));
        const text = (await page.getByText(/^\d+ entries/).textContent()) ?? '';
        return Number(/^(\d+)/.exec(text)?.[1]) >= N || null;
      },
      60_000,
      100,
    );
    await page.getByText(`${N} entries`, { exact: true }).waitFor(WAIT);
    // The last page may arrive after the final scroll: scroll once more, then the last row shows.
    await poll(
      'the last entry rendered at the end of the list',
      async () => {
        await viewport.evaluate((el) => el.scrollTo(0, el.scrollHeight));
        return Number(await rows.last().getAttribute('aria-posinset')) === N || null;
      },
      30_000,
      100,
    );
    assert.ok((await rows.count()) < 40, 'still virtualised at the end');
    await axe(page, 'audit long list');
    await shot(page, 'audit-05-long-list');

    // Actor and target filters go to the server too; an app is named (the page sends its id).
    await page.getByLabel('Action').fill('');
    await page.getByLabel('Target').fill(appName);
    await page.getByRole('button', { name: 'Apply' }).click();
    await page
      .getByText(/^\d+ entries$/)
      .filter({ hasNotText: `${N}` })
      .waitFor(WAIT);
    // The count can change a frame before the list renders the new rows: wait for the rows.
    const targetsOf = () =>
      page.getByTestId('audit-row').locator(':scope > span:nth-child(4)').allTextContents();
    await poll(
      'the filtered rows rendered',
      async () => ((await targetsOf()).length > 0 ? true : null),
      30_000,
      100,
    );
    const targets = await targetsOf();
    // Each target by its name, not its id.
    assert.ok(
      targets.length > 0 && targets.every((x) => x === appName),
      `only the app's entries: ${targets.join(', ')}`,
    );
    await page.getByLabel('Actor').fill('nobody-by-that-name');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByText('0 entries', { exact: true }).waitFor(WAIT);
  });
});

test("the env editor sends the ETag it loaded: another editor's change in between is a clear 412 message, nothing is overwritten", async (t) => {
  if (!(await needChromium(t))) return;
  await withFailureShot(page, 'env-stale', async () => {
    const ifMatch: Array<string | null> = [];
    page.on('request', (r) => {
      if (r.url().includes(`/api/apps/${appId}/env/`) && r.method() === 'PUT')
        ifMatch.push(r.headers()['if-match'] ?? null);
    });
    await page.goto(`${s!.url}/apps/${appId}`);
    const row = (key: string) =>
      page.getByTestId('env-row').filter({ has: page.locator('td', { hasText: new RegExp(`^${key}$`) }) });
    await row('GREETING').waitFor(WAIT);
    const loaded = (await api.req('GET', `/api/apps/${appId}/env`)).headers.get('etag');

    // Another editor changes the set after the page loaded it.
    await ok(api.req('PUT', `/api/apps/${appId}/env/OTHER_EDITOR`, { value: 'theirs', secret: false }), 201);
    await page.getByRole('textbox', { name: 'Key', exact: true }).fill('MINE');
    await page.getByRole('textbox', { name: 'Value', exact: true }).fill('mine');
    await page.getByRole('checkbox', { name: 'Secret', exact: true }).uncheck();
    await page.getByRole('button', { name: 'Set', exact: true }).click();
    const stale = page.getByTestId('env-stale');
    await stale.filter({ hasText: 'changed elsewhere' }).waitFor(WAIT);
    assert.deepEqual(ifMatch, [loaded], 'the write carried the ETag the page loaded');
    await shot(page, 'env-stale');
    await axe(page, 'env stale message');
    const now = await envOf();
    assert.equal(now.MINE, undefined, 'nothing was written');
    assert.equal(now.OTHER_EDITOR, 'theirs', "the other editor's change stands");

    // Reload shows their change; the same edit then goes through.
    await stale.getByRole('button', { name: 'Reload variables' }).click();
    await row('OTHER_EDITOR').waitFor(WAIT);
    await stale.waitFor({ state: 'detached', ...WAIT });
    await page.getByRole('button', { name: 'Set', exact: true }).click();
    await row('MINE').waitFor(WAIT);
    assert.equal((await envOf()).MINE, 'mine');
  });
});
