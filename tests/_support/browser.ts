// Debian's chromium driven by playwright-core (no browser download). The gate fails under CI
// when chromium is missing, like every other component gate.
import { access, mkdir } from 'node:fs/promises';
import { constants } from 'node:fs';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { chromium, type Browser, type Page } from 'playwright-core';
import { AxeBuilder } from '@axe-core/playwright';
import { missing } from './ci.js';

export const CHROMIUM = process.env.SVC_CHROMIUM ?? '/usr/bin/chromium';
export const SCREENSHOTS = join(process.cwd(), 'test-artifacts', 'screenshots');

export async function needChromium(t: Pick<TestContext, 'name' | 'skip'>): Promise<boolean> {
  try {
    await access(CHROMIUM, constants.X_OK);
    return true;
  } catch {
    return missing(
      t,
      `chromium is not installed at ${CHROMIUM} (apt-get install chromium)`,
      'SVC_REQUIRE_CHROMIUM',
    );
  }
}

export async function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // Root cannot use chromium's sandbox; the pages are our own dashboard on loopback.
    args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
  });
}

/** Full-page screenshot to test-artifacts/screenshots/<name>.png (kept by CI). */
export async function shot(page: Page, name: string): Promise<void> {
  await mkdir(SCREENSHOTS, { recursive: true });
  await page.screenshot({
    path: join(SCREENSHOTS, `${name.replace(/[^a-z0-9-]+/gi, '-')}.png`),
    fullPage: true,
  });
}

/** Runs a browser test body; on failure saves a screenshot named after the test, then rethrows. */
export async function withFailureShot<T>(page: Page, name: string, body: () => Promise<T>): Promise<T> {
  try {
    return await body();
  } catch (e) {
    await shot(page, `FAILED-${name}`).catch(() => {});
    throw e;
  }
}

/** axe over the page: no serious or critical accessibility violation. */
export async function axe(p: Page, name: string): Promise<void> {
  const r = await new AxeBuilder({ page: p }).analyze();
  const bad = r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(
    bad.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`),
    [],
    `${name}: serious or critical accessibility violations`,
  );
}

/** The XSS probes (`<b class="xss">`, `<img src=x onerror=...>`) stayed text: nothing was created or ran. */
export async function assertNoInjectedMarkup(p: Page): Promise<void> {
  assert.equal(await p.locator('b.xss').count(), 0, 'no <b class="xss"> element was created');
  assert.equal(await p.locator('img[src="x"]').count(), 0, 'no injected <img> element');
  assert.equal(await p.evaluate(() => (window as any).__xss), undefined, 'no injected handler ran');
}
