// Every page of the dashboard, and a small fleet to show on them: the tour the everyday browser
// test walks (as an owner and as a deployer, at a laptop's and a phone's width) and the one
// bench/dashboard-shots.ts photographs for docs/dashboard.md. One list, so a page added to the
// dashboard is added to both.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Page } from 'playwright-core';
import { ADMIN, Client, type TestServer } from './server.js';
import { BASE_IMAGE, ensureBaseImage } from './docker.js';
import type { GitServer } from './gitserver.js';
import { poll } from './wait.js';

const run = promisify(execFile);

/** An image app needs an image with a command: busybox's web server on 8080. */
export const WEB_IMAGE = 'svc-test/web:dashboard-tour';

export async function ensureWebImage(): Promise<void> {
  await ensureBaseImage();
  await run('sh', [
    '-c',
    'printf "FROM %s\\nRUN mkdir -p /www && echo hello > /www/index.html\\nEXPOSE 8080\\nCMD [\\"httpd\\", \\"-f\\", \\"-p\\", \\"8080\\", \\"-h\\", \\"/www\\"]\\n" "$1" | docker build -q -t "$2" -',
    'sh',
    BASE_IMAGE,
    WEB_IMAGE,
  ]);
}

export interface TourPage {
  /** A short name: the screenshot's and the assertion's. */
  name: string;
  path: (f: Fleet) => string;
  /** The page's first heading once it has rendered. */
  heading: (f: Fleet) => string;
  /** The tab's title once the page has rendered. */
  title: (f: Fleet) => string;
  /** Only shown to an owner (the navigation hides it from a deployer). */
  ownerOnly?: boolean;
}

export interface Fleet {
  /** A deployed image app with a port, a URL (automatic host and a domain) and variables. */
  shop: { id: string; name: string };
  /** A git app built from its Dockerfile (build log with steps). */
  site: { id: string; name: string };
  /** An app whose deployment failed. */
  broken: { id: string; name: string };
  /** Never deployed. */
  idle: { id: string; name: string };
  baseDomain: string;
}

const app = (k: keyof Omit<Fleet, 'baseDomain'>, tab?: string) => ({
  path: (f: Fleet) => `/apps/${f[k].id}${tab ? `?tab=${tab}` : ''}`,
  heading: (f: Fleet) => f[k].name,
  title: (f: Fleet) => `${f[k].name} · svc`,
});
const hub = (path: string, heading: string) => ({
  path: () => path,
  heading: () => heading,
  title: () => `${heading} · svc`,
});

export const TOUR: readonly TourPage[] = [
  { name: 'overview', ...hub('/', 'Overview') },
  { name: 'apps', ...hub('/apps', 'Apps') },
  { name: 'app', ...app('shop') },
  { name: 'app-logs', ...app('shop', 'logs') },
  { name: 'app-metrics', ...app('shop', 'metrics') },
  { name: 'app-domains', ...app('shop', 'domains') },
  { name: 'app-databases', ...app('shop', 'databases') },
  { name: 'app-backups', ...app('shop', 'backups') },
  { name: 'app-jobs', ...app('shop', 'jobs') },
  { name: 'app-shell', ...app('shop', 'shell') },
  { name: 'app-source', ...app('shop', 'source') },
  { name: 'git-app', ...app('site') },
  { name: 'git-app-webhook', ...app('site', 'git') },
  { name: 'git-app-build', ...app('site', 'build') },
  { name: 'git-app-previews', ...app('site', 'previews') },
  { name: 'templates', ...hub('/addons', 'Templates') },
  { name: 'domains', ...hub('/domains', 'Domains') },
  { name: 'alerts', ...hub('/alerts', 'Alerts') },
  { name: 'registries', ...hub('/registries', 'Registries') },
  { name: 'audit', ...hub('/audit', 'Audit') },
  { name: 'security', ...hub('/security', 'Security') },
  { name: 'notifications', ...hub('/notifications', 'Notifications'), ownerOnly: true },
  { name: 'instance', ...hub('/instance', 'Instance') },
  { name: 'nodes', ...hub('/nodes', 'Nodes') },
  { name: 'operators', ...hub('/operators', 'Operators'), ownerOnly: true },
  { name: 'tokens', ...hub('/tokens', 'Tokens') },
  { name: 'profile', ...hub('/profile', 'Profile') },
];

/** Opens a tour page and waits until its heading shows (and, on an app page, its tab's content). */
export async function visit(
  page: Page,
  base: string,
  p: TourPage,
  f: Fleet,
  timeout = 60_000,
): Promise<void> {
  await page.goto(base + p.path(f));
  await page
    .getByRole('heading', { level: 1, name: p.heading(f) })
    .first()
    .waitFor({ timeout });
  // Loading placeholders gone: what is measured and photographed is the page with its data.
  await poll(
    'the page to finish loading',
    async () => (await page.getByText('Loading…').count()) === 0,
    timeout,
    50,
  );
}

/** Horizontal overflow of the whole page, in pixels (0: it fits its width). */
export function pageOverflow(page: Page): Promise<number> {
  return page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
}

/** The elements that reach past the viewport's right edge (innermost first), for a failure message. */
export function pastTheEdge(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const w = document.documentElement.clientWidth;
    const name = (e: Element) =>
      `${e.tagName.toLowerCase()}${e.id ? '#' + e.id : ''}${e.className && typeof e.className === 'string' ? '.' + e.className.trim().split(/\s+/).join('.') : ''}`;
    // Content scrolled inside a box of its own does not widen the page.
    const clipped = (e: Element) => {
      for (let a = e.parentElement; a && a !== document.body; a = a.parentElement)
        if (getComputedStyle(a).overflowX !== 'visible') return true;
      return false;
    };
    const past = (e: Element) => e.getBoundingClientRect().right > w + 1 && !clipped(e);
    return [...document.querySelectorAll('body *')]
      .filter((e) => past(e) && ![...e.children].some(past))
      .slice(0, 8)
      .map(
        (e) =>
          `${name(e)} (${Math.round(e.getBoundingClientRect().right)} px): ${(e.textContent ?? '').trim().slice(0, 40)}`,
      );
  });
}

/** Cards whose content is wider than the card (their own scrollbar), by heading. */
export function overflowingCards(page: Page): Promise<string[]> {
  return page.evaluate(() =>
    [...document.querySelectorAll<HTMLElement>('.card')]
      .filter((c) => c.scrollWidth > c.clientWidth + 1)
      .map((c) => c.querySelector('h2')?.textContent ?? c.className),
  );
}

async function ok(p: Promise<{ status: number; text: string; body: any }>, status = 200) {
  const r = await p;
  assert.equal(r.status, status, r.text);
  return r.body;
}

async function deployed(c: Client, appId: string, want: readonly string[]): Promise<string> {
  const d = await ok(c.req('POST', `/api/apps/${appId}/deployments`, {}), 202);
  return poll(
    'the deployment to finish',
    async () => {
      const r = await c.req('GET', `/api/apps/${appId}/deployments/${d.deployment.id}`);
      const st = r.body.deployment?.status as string;
      if (['succeeded', 'failed', 'canceled', 'interrupted'].includes(st)) {
        assert.ok(want.includes(st), `deployment ended ${st}: ${r.body.deployment.error ?? ''}`);
        return st;
      }
      return null;
    },
    300_000,
    250,
  );
}

/** A Dockerfile site on the git server: a build of several steps. */
function siteFiles(): Record<string, string> {
  return {
    'index.html': 'hello from the site\n',
    // The repository's own settings: the deployment says which it applied.
    'svc.yaml': 'services:\n  app:\n    port: 8080\n    health_path: /\n',
    Dockerfile: [
      `FROM ${BASE_IMAGE}`,
      'COPY index.html /www/index.html',
      'EXPOSE 8080',
      'CMD ["httpd", "-f", "-p", "8080", "-h", "/www"]',
      '',
    ].join('\n'),
  };
}

/** The fleet: four apps in their states, a base domain, a domain, variables and a backup. */
export async function seedFleet(s: TestServer, c: Client, git: GitServer, prefix: string): Promise<Fleet> {
  const baseDomain = 'apps.example.test';
  await ok(c.req('PUT', '/api/instance/base-domain', { base_domain: baseDomain }));
  const make = async (name: string, source: unknown) =>
    (await ok(c.req('POST', '/api/apps', { name, source }), 201)).app as { id: string; name: string };
  const shop = await make(`${prefix}shop`, { type: 'image', image: WEB_IMAGE });
  const repo = `${prefix}site`;
  await git.commit(repo, siteFiles(), 'the first site');
  const site = await make(`${prefix}site`, { type: 'git', repo_url: git.url(repo), branch: 'main' });
  const broken = await make(`${prefix}broken`, { type: 'image', image: 'svc-test/none:missing' });
  const idle = await make(`${prefix}idle`, { type: 'image', image: 'nginx:1.27' });
  await ok(
    c.req('PUT', `/api/apps/${shop.id}/env`, {
      items: [
        { key: 'MODE', value: 'production', secret: false },
        { key: 'API_KEY', value: 'not shown anywhere' },
      ],
    }),
  );
  s.env.deployments.opts.healthTimeoutMs = 60_000;
  s.env.deployments.opts.settleMs = 1_000;
  await Promise.all([
    deployed(c, shop.id, ['succeeded']),
    deployed(c, site.id, ['succeeded']),
    deployed(c, broken.id, ['failed']),
  ]);
  for (const a of [shop, site])
    await ok(c.req('PATCH', `/api/apps/${a.id}/services/app`, { port: 8080, health_path: '/' }));
  await ok(
    c.req('POST', `/api/apps/${shop.id}/domains`, { hostname: 'shop.example.test', service: 'app' }),
    201,
  );
  // Another session of the owner, from a browser with a long user agent (the profile lists it).
  const phone = new Client(s.url, {
    'user-agent':
      'Mozilla/5.0 (Linux; Android 14; Pixel 8 Pro Build/AP2A.240905.003; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/128.0.6613.127 Mobile Safari/537.36 EdgA/128.0.2739.79',
  });
  await ok(phone.req('POST', '/api/auth/login', ADMIN));
  return { shop, site, broken, idle, baseDomain };
}
