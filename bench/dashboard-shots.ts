// npm run docs:screenshots — photographs every page of the dashboard for docs/dashboard.md, in
// Debian's chromium against the real control plane, Docker engine, a git server on loopback and,
// when Caddy and Pebble are installed, the edge lab (else the proxy is off and the pages say so).
// A small fleet is made first (tests/_support/dashboard-tour.ts): a deployed image app with its
// URLs, a git app built from its Dockerfile, a failed one and one never deployed.
//
// Every page at 1366x768 and 390x844, as an owner and as a deployer limited to two apps, goes to
// test-artifacts/dashboard-shots/ (to look at); the ones docs/dashboard.md shows go to
// docs/dashboard/ (BENCH_SHOTS_DOCS=0 leaves those untouched).
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Browser, BrowserContext } from 'playwright-core';
import { startTestServer, adminClient, type TestServer } from '../tests/_support/server.js';
import { launchChromium } from '../tests/_support/browser.js';
import { startGitServer } from '../tests/_support/gitserver.js';
import { edgeUsable, startEdgeLab, type EdgeLab } from '../tests/_support/edge.js';
import { people } from '../tests/_support/people.js';
import { cleanupApp } from '../tests/engine/_deploy.js';
import {
  TOUR,
  ensureWebImage,
  overflowingCards,
  pageOverflow,
  pastTheEdge,
  seedFleet,
  visit,
  type Fleet,
} from '../tests/_support/dashboard-tour.js';

const ALL = join(process.cwd(), 'test-artifacts', 'dashboard-shots');
const DOCS = join(process.cwd(), 'docs', 'dashboard');
const WRITE_DOCS = process.env.BENCH_SHOTS_DOCS !== '0';
const WIDTHS = [
  { width: 1366, height: 768 },
  { width: 390, height: 844 },
] as const;
/** What docs/dashboard.md shows beyond every page as an owner at 1366 px. */
const DOC_EXTRA: Record<string, readonly string[]> = {
  'owner-390': ['sign-in', 'overview', 'apps', 'app', 'app-backups', 'instance'],
  'deployer-1366': ['overview', 'apps', 'app', 'app-domains', 'app-backups', 'instance'],
};

async function contextFor(
  browser: Browser,
  s: TestServer,
  cookies: Map<string, string> | null,
  size: (typeof WIDTHS)[number],
): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport: size, deviceScaleFactor: 1 });
  if (cookies) await context.addCookies([...cookies].map(([name, value]) => ({ name, value, url: s.url })));
  return context;
}

const lab: EdgeLab | null = (await edgeUsable()) === null ? await startEdgeLab() : null;
const git = await startGitServer();
const s = await startTestServer(
  { ...(lab?.vars ?? {}), SVC_ENABLE_SHELL: 'true' },
  lab ? { edge: { checkIntervalMs: 1000, checkerTickMs: 250 } } : {},
);
const browser = await launchChromium();
let fleet: Fleet | null = null;
try {
  await mkdir(ALL, { recursive: true });
  if (WRITE_DOCS) await mkdir(DOCS, { recursive: true });
  const save = async (context: BrowserContext, key: string, name: string, full = true) => {
    const page = context.pages()[0]!;
    const file = `${key}-${name}.png`;
    await page.screenshot({ path: join(ALL, file), fullPage: full });
    const [who, width] = key.split('-');
    if (WRITE_DOCS && ((who === 'owner' && width === '1366') || DOC_EXTRA[key]?.includes(name)))
      await page.screenshot({ path: join(DOCS, file), fullPage: full });
  };
  // Before setup: the first page a new user sees, and the sign-in page.
  for (const size of WIDTHS) {
    const context = await contextFor(browser, s, null, size);
    const page = await context.newPage();
    await page.goto(s.url + '/');
    await page.getByRole('heading', { name: 'Set up svc' }).waitFor();
    await save(context, `owner-${size.width}`, 'setup');
    await context.close();
  }
  const admin = await adminClient(s);
  for (const size of WIDTHS) {
    const context = await contextFor(browser, s, null, size);
    const page = await context.newPage();
    await page.goto(s.url + '/');
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await save(context, `owner-${size.width}`, 'sign-in');
    await context.close();
  }
  await ensureWebImage();
  fleet = await seedFleet(s, admin, git, 'tour-');
  const dana = await people(s).operator('dana', 'deployer', [fleet.shop.id, fleet.site.id]);
  const who = [
    { key: 'owner', cookies: admin.cookies },
    { key: 'deployer', cookies: dana.client.cookies },
  ] as const;
  for (const size of WIDTHS)
    for (const w of who) {
      const context = await contextFor(browser, s, w.cookies, size);
      const page = await context.newPage();
      for (const p of TOUR) {
        if (p.ownerOnly && w.key !== 'owner') continue;
        await visit(page, s.url, p, fleet);
        // Live parts (the socket's state, sparklines) settle.
        await page.waitForTimeout(400);
        await save(context, `${w.key}-${size.width}`, p.name);
        // What does not fit, said here too: the everyday browser test fails on it.
        const over = await pageOverflow(page);
        const cards = await overflowingCards(page);
        if (over > 0 || cards.length)
          console.log(
            `${w.key} ${size.width} ${p.name}: page ${over} px too wide ${JSON.stringify(await pastTheEdge(page))}; cards wider than themselves: ${cards.join(', ') || 'none'}`,
          );
      }
      await context.close();
    }
  console.log(`screenshots: ${ALL}${WRITE_DOCS ? ` and ${DOCS}` : ''}`);
} finally {
  await browser.close();
  if (fleet)
    for (const a of [fleet.shop, fleet.site, fleet.broken, fleet.idle])
      await cleanupApp(s.env.engine, a.name);
  await s.stop();
  await git.stop();
  await lab?.stop();
}
