// The dashboard for everyday use, in Debian's chromium against the real control plane and Docker
// engine, with the proxy off (so every page must say that no URL reaches the apps): every page as
// an owner and as a deployer limited to two apps, at 1366x768 and 390x844 (nothing wider than the
// screen, nothing wider than its card, a title of its own, axe); no control a deployer cannot use;
// the header badge during a redeploy (app statuses only) and the URL after it; Stop and Start;
// error text shown once next to its field; the apps list a page at a time with search; names, not
// ids; rollback behind a confirmation; the step-up dialog's explanation; the build log's steps.
// One server, one browser, one fleet (tests/_support/dashboard-tour.ts) for the whole file.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startTestServer, adminClient, ADMIN, type TestServer, type Client } from '../_support/server.js';
import { needChromium, launchChromium, withFailureShot, CHROMIUM, axe } from '../_support/browser.js';
import { needDocker, dockerReachable } from '../_support/docker.js';
import { startGitServer, type GitServer } from '../_support/gitserver.js';
import { people } from '../_support/people.js';
import { cleanupApp } from '../engine/_deploy.js';
import {
  TOUR,
  WEB_IMAGE,
  ensureWebImage,
  overflowingCards,
  pageOverflow,
  pastTheEdge,
  seedFleet,
  visit,
  type Fleet,
  type TourPage,
} from '../_support/dashboard-tour.js';
import { insertApp } from '#lib/apps/store.js';
import { deleteApp } from '#lib/apps/ops.js';
import { invalidateCredentials } from '#lib/auth/cache.js';

const WAIT = { timeout: 60_000 };
const DEPLOY_WAIT = { timeout: 300_000 };
const SIZES = [
  { width: 1366, height: 768 },
  { width: 390, height: 844 },
] as const;
/** The badge's words: an app's statuses (dashboard/src/status.tsx), nothing else. */
const APP_STATUS_WORDS = [
  'created',
  'deploying',
  'running',
  'degraded',
  'stopped',
  'failed',
  'crash loop',
  'out of memory',
  'sleeping',
];

let s: TestServer | undefined;
let git: GitServer | undefined;
let browser: Browser | undefined;
let admin: Client;
let fleet: Fleet;
let owner: Page;
let deployer: Page;
const contexts: BrowserContext[] = [];

before(async () => {
  if (!existsSync(CHROMIUM) || !(await dockerReachable())) return;
  await ensureWebImage();
  git = await startGitServer();
  s = await startTestServer({ SVC_ENABLE_SHELL: 'true' });
  admin = await adminClient(s);
  fleet = await seedFleet(s, admin, git, 'ev-');
  const dana = await people(s).operator('dana', 'deployer', [fleet.shop.id, fleet.site.id]);
  browser = await launchChromium();
  const open = async (cookies: Map<string, string>) => {
    const context = await browser!.newContext({ viewport: SIZES[0] });
    contexts.push(context);
    await context.addCookies([...cookies].map(([name, value]) => ({ name, value, url: s!.url })));
    return context.newPage();
  };
  owner = await open(admin.cookies);
  deployer = await open(dana.client.cookies);
});

after(async () => {
  await browser?.close();
  if (s && fleet)
    for (const a of [fleet.shop, fleet.site, fleet.broken, fleet.idle])
      await cleanupApp(s.env.engine, a.name);
  await s?.stop();
  await git?.stop();
});

async function ready(t: import('node:test').TestContext): Promise<boolean> {
  return (await needChromium(t)) && (await needDocker(t));
}

/** The names of the buttons and button-like links on the page (a disabled one is offered too). */
function controls(page: Page): Promise<string[]> {
  return page
    .locator('main button, main a.button')
    .evaluateAll((els) =>
      els.map((e) => (e.getAttribute('aria-label') ?? e.textContent ?? '').replace(/\s+/g, ' ').trim()),
    );
}

test('every page, as an owner and as a deployer, at 1366x768 and 390x844: fits, names its tab, passes axe', async (t) => {
  if (!(await ready(t))) return;
  for (const [who, page] of [
    ['owner', owner],
    ['deployer', deployer],
  ] as const)
    await withFailureShot(page, `everyday-tour-${who}`, async () => {
      for (const size of SIZES) {
        await page.setViewportSize(size);
        for (const p of TOUR) {
          if (p.ownerOnly && who !== 'owner') continue;
          await visit(page, s!.url, p, fleet);
          const where = `${who} ${size.width} ${p.name}`;
          assert.equal(await page.title(), p.title(fleet), `${where}: the tab's title`);
          assert.equal(
            await pageOverflow(page),
            0,
            `${where}: wider than the screen: ${await pastTheEdge(page)}`,
          );
          assert.deepEqual(await overflowingCards(page), [], `${where}: cards wider than themselves`);
          if (size.width === 1366 && who === 'owner') await axe(page, where);
        }
      }
      await page.setViewportSize(SIZES[0]);
    });
});

/** What a deployer must not be offered, page by page (an owner is offered each). */
const OWNER_ONLY: Record<string, RegExp[]> = {
  overview: [/^Create app$/],
  apps: [/^New app$/, /^From a template$/, /^Import$/],
  app: [/^Delete$/, /^Save app$/, /^Save sleep setting$/, /^Save release command$/],
  'app-domains': [
    /^Add domain$/,
    /^Delete shop\.example\.test$/,
    /^Check DNS and certificate of /,
    /^Upload certificate/,
  ],
  'app-databases': [/^Create database$/],
  'app-backups': [/^Add backup$/],
  'git-app-webhook': [/^Generate key$/],
  'git-app-build': [/^Save build settings$/, /^Save build limits$/],
  'git-app-previews': [/^Save preview settings$/],
  templates: [/^Install /],
  domains: [/^Re-check /],
  instance: [
    /^Save$/,
    /^Prune$/,
    /^Restart the control plane$/,
    /^Reset the instance$/,
    /^Back up now$/,
    /^Change$/,
  ],
};
/** What the deployer (deploy, variables, triggers, backups, shell, jobs) is offered on their apps. */
const DEPLOYER_HAS: Record<string, RegExp[]> = {
  app: [/^Deploy$/, /^Stop$/, /^Restart app$/, /^Edit MODE$/, /^Reveal API_KEY$/, /^Set$/, /^Paste \.env$/],
  'git-app-webhook': [/^(Generate|Regenerate) secret$/, /^Add trigger$/],
  'git-app-previews': [/^Create preview$/],
  'app-jobs': [/^New job$/, /^Run a command…$/],
};

test('a deployer is offered no control they cannot use, and the ones they can', async (t) => {
  if (!(await ready(t))) return;
  const byName = new Map(TOUR.map((p) => [p.name, p]));
  for (const name of new Set([...Object.keys(OWNER_ONLY), ...Object.keys(DEPLOYER_HAS)])) {
    const p = byName.get(name) as TourPage;
    await withFailureShot(deployer, `everyday-deployer-${name}`, async () => {
      await visit(owner, s!.url, p, fleet);
      await visit(deployer, s!.url, p, fleet);
      const mine = await controls(owner);
      const theirs = await controls(deployer);
      for (const re of OWNER_ONLY[name] ?? []) {
        assert.ok(
          mine.some((c) => re.test(c)),
          `${name}: the owner is offered ${re} (${mine.join(' | ')})`,
        );
        assert.deepEqual(
          theirs.filter((c) => re.test(c)),
          [],
          `${name}: the deployer is not offered ${re}`,
        );
      }
      for (const re of DEPLOYER_HAS[name] ?? [])
        assert.ok(
          theirs.some((c) => re.test(c)),
          `${name}: the deployer is offered ${re} (${theirs.join(' | ')})`,
        );
    });
  }
  // Pages of the instance's people and channels are not in their navigation either.
  const nav = deployer.getByRole('navigation', { name: 'Main' });
  for (const link of ['Operators', 'Notifications'])
    assert.equal(await nav.getByRole('link', { name: link, exact: true }).count(), 0, link);
});

test('during a redeploy the badge says only app statuses; Deploy is busy; the URL shows after, and the proxy state', async (t) => {
  if (!(await ready(t))) return;
  await withFailureShot(owner, 'everyday-redeploy', async () => {
    await visit(
      owner,
      s!.url,
      TOUR.find((p) => p.name === 'app')!,
      fleet,
    );
    // The proxy is off here: the header says what that costs.
    await owner.getByTestId('proxy-notice').filter({ hasText: 'SVC_PROXY=off' }).waitFor(WAIT);
    await owner.evaluate(() => {
      const seen: string[] = [];
      (window as any).__badges = seen;
      const badge = () => document.querySelector('[data-testid="app-status"]');
      seen.push(badge()?.textContent ?? '');
      new MutationObserver(() => {
        const t = badge()?.textContent ?? '';
        if (t !== seen[seen.length - 1]) seen.push(t);
      }).observe(document.querySelector('main')!, { subtree: true, childList: true, characterData: true });
    });
    const before = (await admin.req('GET', `/api/apps/${fleet.shop.id}/deployments`)).body.items.length;
    await owner.getByRole('button', { name: 'Deploy', exact: true }).click();
    // Busy from the moment it is queued until it ends.
    const busy = owner
      .getByRole('group', { name: 'App actions' })
      .getByRole('button', { name: /^(Queued|Deploying)…$/ });
    await busy.waitFor(WAIT);
    assert.equal(await busy.isDisabled(), true);
    await owner.getByTestId('deployment-row').nth(before).waitFor(WAIT);
    await owner.getByTestId('deployment-row').first().locator('.badge-succeeded').waitFor(DEPLOY_WAIT);
    await owner
      .getByTestId('app-status')
      .filter({ hasText: /^running$/ })
      .waitFor(WAIT);
    await owner.getByRole('button', { name: 'Deploy', exact: true }).waitFor(WAIT);
    const seen: string[] = await owner.evaluate(() => (window as any).__badges);
    assert.deepEqual(
      seen.filter((x) => !APP_STATUS_WORDS.includes(x)),
      [],
      `badge texts: ${seen.join(' -> ')}`,
    );
    assert.ok(seen.includes('deploying'), `badge texts: ${seen.join(' -> ')}`);
    assert.equal(seen[seen.length - 1], 'running');
    // Where it answers: the automatic host and the domain, as links, after the deploy and in the header.
    const live = owner.getByTestId('deploy-live');
    await live.waitFor(WAIT);
    const auto = `http://${fleet.shop.name}.${fleet.baseDomain}`;
    assert.equal(
      await live.getByRole('link', { name: `${fleet.shop.name}.${fleet.baseDomain}` }).getAttribute('href'),
      auto,
    );
    assert.equal(
      await owner
        .getByTestId('app-where')
        .getByRole('link', { name: 'shop.example.test' })
        .getAttribute('href'),
      'http://shop.example.test',
    );
    // The newest deployment is the live one; an older one rolls back only after a confirmation.
    const rows = owner.getByTestId('deployment-row');
    assert.equal(await rows.first().getByTestId('live-badge').count(), 1);
    let asked = '';
    owner.once('dialog', (d) => {
      asked = d.message();
      void d.dismiss();
    });
    await rows.nth(1).getByRole('button', { name: 'Roll back' }).click();
    assert.match(asked, /^Roll back to the deployment of .+\? Its kept images replace what runs now\.$/);
    assert.equal(
      (await admin.req('GET', `/api/apps/${fleet.shop.id}/deployments`)).body.items.length,
      before + 1,
    );
  });
});

test("a newcomer's app: never deployed, deployed without a port, then its port saved: the header says each time what gives it a URL", async (t) => {
  if (!(await ready(t))) return;
  await withFailureShot(owner, 'everyday-first-url', async () => {
    const created = await admin.req('POST', '/api/apps', {
      name: 'ev-first',
      source: { type: 'image', image: WEB_IMAGE },
    });
    assert.equal(created.status, 201, created.text);
    const id = created.body.app.id as string;
    await owner.goto(`${s!.url}/apps/${id}`);
    const where = owner.getByTestId('app-where');
    await where.getByTestId('no-url').filter({ hasText: 'deploy it' }).waitFor(WAIT);
    await owner.getByRole('button', { name: 'Deploy', exact: true }).click();
    await owner.getByTestId('deployment-row').first().locator('.badge-succeeded').waitFor(DEPLOY_WAIT);
    await where.getByTestId('no-url').filter({ hasText: 'service "app" has no port' }).waitFor(WAIT);
    await owner.getByRole('textbox', { name: 'Port of app' }).fill('8080');
    await owner.getByRole('button', { name: 'Save app' }).click();
    await owner.getByTestId('service-saved').waitFor(WAIT);
    const link = where.getByRole('link', { name: `ev-first.${fleet.baseDomain}` });
    await link.waitFor(WAIT);
    assert.equal(await link.getAttribute('href'), `http://ev-first.${fleet.baseDomain}`);
    // Gone again: the fleet's counts below stay the tour's.
    await deleteApp(s!.env, id, { volumes: true });
    await cleanupApp(s!.env.engine, 'ev-first');
  });
});

test('Stop and Start an app from its header; the overview and the apps list say the proxy is off', async (t) => {
  if (!(await ready(t))) return;
  await withFailureShot(owner, 'everyday-stop-start', async () => {
    await visit(
      owner,
      s!.url,
      TOUR.find((p) => p.name === 'app')!,
      fleet,
    );
    const actions = owner.getByRole('group', { name: 'App actions' });
    owner.once('dialog', (d) => void d.accept());
    await actions.getByRole('button', { name: 'Stop', exact: true }).click();
    await owner
      .getByTestId('app-status')
      .filter({ hasText: /^stopped$/ })
      .waitFor(WAIT);
    await actions.getByRole('button', { name: 'Start', exact: true }).click();
    await owner
      .getByTestId('app-status')
      .filter({ hasText: /^running$/ })
      .waitFor(WAIT);
    for (const name of ['overview', 'apps']) {
      await visit(
        owner,
        s!.url,
        TOUR.find((p) => p.name === name)!,
        fleet,
      );
      await owner.getByTestId('proxy-notice').filter({ hasText: 'No proxy.' }).waitFor(WAIT);
    }
  });
});

test("an error is said once, next to its field, in the form's words", async (t) => {
  if (!(await ready(t))) return;
  await withFailureShot(owner, 'everyday-errors', async () => {
    await visit(
      owner,
      s!.url,
      TOUR.find((p) => p.name === 'overview')!,
      fleet,
    );
    const form = owner.locator('form').filter({ has: owner.getByRole('button', { name: 'Create app' }) });
    await form.getByLabel('Name', { exact: true }).fill('ev-bad-image');
    await form.getByLabel('Image', { exact: true }).check();
    await form.getByLabel('Image', { exact: true }).and(owner.getByRole('textbox')).fill('Not An Image!');
    await form.getByRole('button', { name: 'Create app' }).click();
    const err = form.getByTestId('field-error');
    await err.waitFor(WAIT);
    const text = (await err.innerText()).trim();
    assert.match(text, /^Not an image reference like "nginx:1\.27"/);
    assert.doesNotMatch(text, /source\.image|Invalid field/);
    // Next to the field: the input says it is invalid and is described by the sentence.
    const input = form.getByRole('textbox', { name: 'Image' });
    assert.equal(await input.getAttribute('aria-invalid'), 'true');
    assert.match((await input.getAttribute('aria-describedby')) ?? '', /image-err/);
    // Once on the page: no second copy above the button or in an alert.
    const body = await owner.locator('main').innerText();
    assert.equal(body.split(text).length - 1, 1, 'the sentence appears once');
    assert.equal(await form.getByTestId('form-error').count(), 0);
    // A name taken: said next to the name.
    await form.getByLabel('Name', { exact: true }).fill(fleet.shop.name);
    await input.fill('nginx:1.27');
    await form.getByRole('button', { name: 'Create app' }).click();
    await form
      .getByTestId('field-error')
      .filter({ hasText: `An app named "${fleet.shop.name}" already exists.` })
      .waitFor(WAIT);
    assert.equal(await form.getByTestId('field-error').count(), 1);
  });
});

test('the apps list: a page at a time with "show more", a search by name; names not ids on domains and audit', async (t) => {
  if (!(await ready(t))) return;
  await withFailureShot(owner, 'everyday-apps-list', async () => {
    for (let i = 0; i < 60; i++)
      await insertApp(s!.env.db, `bulk-${String(i).padStart(3, '0')}`, {
        type: 'image',
        image: 'nginx:1.27',
      });
    await visit(
      owner,
      s!.url,
      TOUR.find((p) => p.name === 'apps')!,
      fleet,
    );
    const total = 64;
    await owner.getByRole('heading', { name: `${total} apps` }).waitFor(WAIT);
    assert.equal(await owner.getByTestId('apps-row').count(), 50);
    await owner.getByRole('button', { name: `Show ${total - 50} more` }).click();
    await owner
      .getByTestId('apps-row')
      .nth(total - 1)
      .waitFor(WAIT);
    assert.equal(await owner.getByTestId('apps-row').count(), total);
    await owner.getByRole('searchbox', { name: 'Search apps by name' }).fill('bulk-01');
    await owner.getByRole('heading', { name: '10 apps matching “bulk-01”' }).waitFor(WAIT);
    assert.equal(await owner.getByTestId('apps-row').count(), 10);
    // The shop row: its status, URL and last deploy with who asked.
    await owner.getByRole('searchbox', { name: 'Search apps by name' }).fill(fleet.shop.name);
    const row = owner.getByTestId('apps-row').filter({ hasText: fleet.shop.name });
    await row
      .locator('td.wide-only')
      .getByTestId('last-deploy')
      .filter({ hasText: `by ${ADMIN.username}` })
      .waitFor(WAIT);
    assert.equal(
      await row.getByTestId('app-url').first().getAttribute('href'),
      `http://${fleet.shop.name}.${fleet.baseDomain}`,
    );
    // Domains name the app they serve; the audit names its targets.
    await visit(
      owner,
      s!.url,
      TOUR.find((p) => p.name === 'domains')!,
      fleet,
    );
    await owner
      .getByTestId('domain-row')
      .filter({ hasText: 'shop.example.test' })
      .getByRole('link', { name: fleet.shop.name })
      .waitFor(WAIT);
    assert.equal(
      await owner.locator('main').getByText(fleet.shop.id).count(),
      0,
      'no app id on the domains page',
    );
    await visit(
      owner,
      s!.url,
      TOUR.find((p) => p.name === 'audit')!,
      fleet,
    );
    await owner.getByTestId('audit-row').filter({ hasText: fleet.shop.name }).first().waitFor(WAIT);
    assert.equal(
      await owner.getByTestId('audit-viewport').getByText(fleet.shop.id).count(),
      0,
      'no app id in the audit list',
    );
  });
});

test('the step-up dialog says why it asks; the build log has times and its steps without the internal labels', async (t) => {
  if (!(await ready(t))) return;
  await withFailureShot(owner, 'everyday-stepup-buildlog', async () => {
    await s!.env.db.updateTable('sessions').set({ step_up_until: null }).execute();
    invalidateCredentials();
    await visit(
      owner,
      s!.url,
      TOUR.find((p) => p.name === 'app')!,
      fleet,
    );
    await owner.getByRole('button', { name: 'Reveal API_KEY' }).click();
    const dialog = owner.getByRole('dialog', { name: 'Confirm it is you' });
    await dialog.waitFor(WAIT);
    assert.match(
      await dialog.getByTestId('stepup-why').innerText(),
      /fresh proof that it is you.*5 minutes; signing in does not count/s,
    );
    await axe(owner, 'step-up dialog');
    await dialog.getByLabel('Password').fill(ADMIN.password);
    await dialog.getByRole('button', { name: 'Verify' }).click();
    await owner.getByTestId('env-row').filter({ hasText: 'not shown anywhere' }).waitFor(WAIT);
    // A plain key, then the Secret box is ticked again for the next one; a value is edited in place.
    const secretBox = owner.getByRole('checkbox', { name: 'Secret', exact: true });
    await owner.getByRole('textbox', { name: 'Key', exact: true }).fill('PLAIN_ONE');
    await owner.getByRole('textbox', { name: 'Value', exact: true }).fill('visible');
    await secretBox.uncheck();
    await owner.getByRole('button', { name: 'Set', exact: true }).click();
    await owner.getByTestId('env-row').filter({ hasText: 'PLAIN_ONE' }).waitFor(WAIT);
    assert.equal(await secretBox.isChecked(), true, 'the next key is secret unless unticked');
    await owner.getByRole('button', { name: 'Edit MODE' }).click();
    await owner.getByRole('textbox', { name: 'New value of MODE' }).fill('staging');
    await owner
      .getByTestId('env-row')
      .filter({ hasText: 'MODE' })
      .getByRole('button', { name: 'Save' })
      .click();
    await owner.getByTestId('env-row').filter({ hasText: 'staging' }).waitFor(WAIT);

    await visit(
      owner,
      s!.url,
      TOUR.find((p) => p.name === 'git-app')!,
      fleet,
    );
    await owner
      .getByTestId('build-progress')
      .filter({ hasText: /^Finished in .+ \(succeeded\)\.$/ })
      .waitFor(WAIT);
    const log = owner.getByRole('log', { name: 'Build log' });
    await log.getByText('Step 4/4 : CMD', { exact: false }).waitFor(WAIT);
    const text = await log.innerText();
    assert.doesNotMatch(text, /LABEL svc\./, 'the internal label steps are not shown');
    assert.doesNotMatch(text, /Step \d+\/[5-9] :/, 'steps are counted without them');
    assert.match(text, /^\d\d:\d\d:\d\d /m, 'each line has its time');
    // Where the settings came from: the repository's svc.yaml named the port and health path.
    await owner
      .getByTestId('deploy-config')
      .filter({ hasText: 'From svc.yaml: port, health_path' })
      .first()
      .waitFor(WAIT);
  });
});

test('the rest of the daily work: metrics say why they are empty, backup schedules read as words, S3 is offered, single-host nodes explain, no backticks', async (t) => {
  if (!(await ready(t))) return;
  await withFailureShot(owner, 'everyday-rest', async () => {
    await visit(
      owner,
      s!.url,
      TOUR.find((p) => p.name === 'app-metrics')!,
      fleet,
    );
    await owner
      .getByTestId('metrics-empty')
      .filter({ hasText: 'Requests that reach the app through its URLs' })
      .waitFor(WAIT);
    await visit(
      owner,
      s!.url,
      TOUR.find((p) => p.name === 'app-backups')!,
      fleet,
    );
    const schedule = owner.getByLabel('Schedule (cron, UTC)');
    await owner.getByText('every day at 03:00 UTC').waitFor(WAIT);
    await schedule.fill('30 4 * * 1');
    await owner.getByText('every Monday at 04:30 UTC').waitFor(WAIT);
    await owner.getByLabel('An S3 bucket').check();
    for (const f of ['Endpoint', 'Bucket', 'Access key ID', 'Secret access key'])
      await owner.getByLabel(f, { exact: true }).waitFor(WAIT);
    await visit(
      owner,
      s!.url,
      TOUR.find((p) => p.name === 'nodes')!,
      fleet,
    );
    await owner.getByTestId('nodes-single-host').waitFor(WAIT);
    assert.equal(await owner.getByRole('button', { name: 'Join a node' }).count(), 0);
    await visit(
      owner,
      s!.url,
      TOUR.find((p) => p.name === 'security')!,
      fleet,
    );
    await owner.getByTestId('posture-item').first().waitFor(WAIT);
    assert.doesNotMatch(await owner.locator('main').innerText(), /`/, 'no literal backtick');
    await visit(
      owner,
      s!.url,
      TOUR.find((p) => p.name === 'notifications')!,
      fleet,
    );
    const kinds = await owner.getByLabel('Kind').locator('option').allInnerTexts();
    assert.deepEqual(kinds, [
      'Discord',
      'Slack',
      'Webhook (signed JSON)',
      'Email (SMTP)',
      'Telegram',
      'ntfy',
      'Gotify',
    ]);
    assert.equal(await owner.getByRole('checkbox', { name: 'deploy failed' }).isChecked(), true);
  });
});
