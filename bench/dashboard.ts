// npm run bench:dashboard — in Debian's chromium against the real control plane (20 apps):
//   size: gzip (level 9) of every script the first page loads (goal: under 80 KB);
//   time: navigation start -> the overview showing real data (an app row), median of rounds,
//         next to the same browser's navigation to GET /api/health and its GET /api/apps, measured
//         in the same run (the overview cannot show data before /api/apps answers).
import { gzipSync } from 'node:zlib';
import { startTestServer, adminClient, ADMIN } from '../tests/_support/server.js';
import { launchChromium } from '../tests/_support/browser.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const s = await startTestServer();
const browser = await launchChromium();
try {
  const admin = await adminClient(s);
  for (let i = 0; i < 20; i++) {
    const r = await admin.req('POST', '/api/apps', { name: `bench-${i}`, source: { type: 'image', image: 'svc-test/busybox:latest' } });
    if (r.status !== 201) throw new Error(`create app: ${r.status} ${r.text}`);
  }
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(s.url + '/api/health');
  const login = await page.evaluate(async (body) => (await fetch('/api/auth/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).status, ADMIN);
  if (login !== 200) throw new Error(`login: ${login}`);

  // The scripts of the first page, as the browser fetched them.
  const scripts = new Map<string, Buffer>();
  page.on('response', async (r) => {
    if (r.request().resourceType() === 'script') scripts.set(r.url(), await r.body());
  });
  await page.goto(s.url + '/');
  await page.getByTestId('app-row').first().waitFor({ timeout: 60_000 });
  await page.waitForLoadState('networkidle');
  let raw = 0;
  let gz = 0;
  for (const body of scripts.values()) {
    raw += body.length;
    gz += gzipSync(body, { level: 9 }).length;
  }

  const overview: number[] = [];
  const health: number[] = [];
  const appsApi: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    await page.goto(s.url + '/api/health');
    health.push(await page.evaluate(() => (performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming).responseEnd));
    // The data the overview waits for: one GET /api/apps (statuses come from the engine).
    appsApi.push(await page.evaluate(async () => {
      const t = performance.now();
      await (await fetch('/api/apps')).json();
      return performance.now() - t;
    }));
    await page.goto(s.url + '/', { waitUntil: 'commit' });
    // Polled every frame: the value is the first frame that shows an app row.
    const at = await page.waitForFunction(() => (document.querySelector('[data-testid="app-row"]') ? performance.now() : 0), undefined, { polling: 'raf', timeout: 60_000 });
    overview.push((await at.jsonValue()) as number);
  }
  const o = median(overview);
  const h = median(health);
  console.log(`first page scripts: ${scripts.size} file(s), ${(raw / 1024).toFixed(1)} KB raw, ${(gz / 1024).toFixed(1)} KB gzip (goal < 80 KB)`);
  console.log(`navigation -> overview with data: median ${o.toFixed(0)} ms over ${ROUNDS} rounds (goal < 300 ms)`);
  const a = median(appsApi);
  console.log(`baseline navigation -> GET /api/health answered: median ${h.toFixed(1)} ms; ratio ${(o / h).toFixed(1)}x`);
  console.log(`baseline GET /api/apps from the page: median ${a.toFixed(1)} ms; overview - that = ${(o - a).toFixed(0)} ms of page load and render`);
} finally {
  await browser.close();
  await s.stop();
}
