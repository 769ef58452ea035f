// The overview's load waterfall (node dist/bench/dashboard-waterfall.js): for a few rounds, when each
// resource started, was sent and answered, and the frame that first showed an app row.
import { startTestServer, adminClient, ADMIN } from '../tests/_support/server.js';
import { launchChromium } from '../tests/_support/browser.js';
const s = await startTestServer();
const browser = await launchChromium();
try {
  const admin = await adminClient(s);
  for (let i = 0; i < 20; i++)
    await admin.req('POST', '/api/apps', {
      name: `bench-${i}`,
      source: { type: 'image', image: 'svc-test/busybox:latest' },
    });
  const page = await (await browser.newContext()).newPage();
  await page.goto(s.url + '/api/health');
  await page.evaluate(
    async (body) =>
      (
        await fetch('/api/auth/login', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        })
      ).status,
    ADMIN,
  );
  for (let r = 0; r < 4; r++) {
    await page.goto(s.url + '/api/health');
    await page.goto(s.url + '/', { waitUntil: 'commit' });
    const at = await page.waitForFunction(
      () => (document.querySelector('[data-testid="app-row"]') ? performance.now() : 0),
      undefined,
      { polling: 'raf', timeout: 60_000 },
    );
    const row = await at.jsonValue();
    const w = await page.evaluate(() => {
      const nav = performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming;
      const out = [
        `nav responseEnd ${nav.responseEnd.toFixed(0)} domInteractive ${nav.domInteractive.toFixed(0)}`,
      ];
      for (const e of performance.getEntriesByType('resource') as PerformanceResourceTiming[])
        out.push(
          `${e.name.replace(location.origin, '')} start ${e.startTime.toFixed(0)} reqStart ${e.requestStart.toFixed(0)} respStart ${e.responseStart.toFixed(0)} end ${e.responseEnd.toFixed(0)}`,
        );
      return out;
    });
    console.log(`round ${r}: row at ${row.toFixed(0)}\n  ${w.join('\n  ')}`);
  }
} finally {
  await browser.close();
  await s.stop();
}
