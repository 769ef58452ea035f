#!/usr/bin/env node
// Runs every compiled test file with Node's own runner in one invocation (one summary).
// `npm test -- auth` runs only the files whose path contains "auth".
//
// Under CI (tests/_support/ci.ts says what counts) a skipped or todo test fails the run: the
// gates already throw there, and this catches any skip that bypasses them. A second reporter
// writes TAP to a temporary file for that count; the first keeps the usual output.
import { readdirSync, statSync, mkdtempSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { spawnSync } from 'node:child_process';

const dir = new URL('../dist/tests/', import.meta.url).pathname;
const { isCI } = await import(new URL('../dist/tests/_support/ci.js', import.meta.url).href);
function find(d) {
  const out = [];
  for (const name of readdirSync(d).sort()) {
    const full = join(d, name);
    if (statSync(full).isDirectory()) out.push(...find(full));
    else if (name.endsWith('.test.js')) out.push(full);
  }
  return out;
}
const filter = process.argv.slice(2);
const all = find(dir);
let files = all;
if (filter.length) files = files.filter((f) => filter.some((x) => f.includes(x)));
// The route coverage check reads what the in-process API tests reached (tests/_support/request.ts
// records it under SVC_TEST_HITS): it runs after them, and selecting it selects them.
const coverage = join(dir, 'api', 'coverage.test.js');
const checksCoverage = files.includes(coverage);
if (checksCoverage)
  files = [...new Set([...files, ...all.filter((f) => f.startsWith(join(dir, 'api') + '/'))])].filter(
    (f) => f !== coverage,
  );
if (!files.length) {
  console.error(`no test file matches ${filter.join(' ')}`);
  process.exit(1);
}
const ci = isCI();
const scratch = mkdtempSync(join(tmpdir(), 'svc-test-run-'));
const hits = join(scratch, 'hits');
mkdirSync(hits);
const taps = [];
const started = Date.now();
let status = 0;
for (const batch of checksCoverage ? [files, [coverage]] : [files]) {
  if (!batch.length) continue;
  const tap = join(scratch, `report-${taps.length}.tap`);
  taps.push(tap);
  const reporters = ci
    ? [
        '--test-reporter=spec',
        '--test-reporter-destination=stdout',
        '--test-reporter=tap',
        `--test-reporter-destination=${tap}`,
      ]
    : [];
  const env = { ...process.env, SVC_TEST_HITS: hits };
  const r = spawnSync(process.execPath, ['--test', '--test-concurrency=2', ...reporters, ...batch], {
    stdio: 'inherit',
    env,
  });
  status = status || (r.status ?? 1);
}
if (checksCoverage) files.push(coverage);
if (ci) {
  let report = '';
  try {
    report = taps.map((t) => readFileSync(t, 'utf8')).join('\n');
  } catch {
    console.error('CI: the TAP report is missing; cannot tell whether tests were skipped');
    status = status || 1;
  }
  const count = (name) =>
    [...report.matchAll(new RegExp(`^# ${name} (\\d+)$`, 'gm'))].reduce((n, m) => n + Number(m[1]), 0);
  const skipped = count('skipped');
  const todo = count('todo');
  if (skipped || todo) {
    const names = [...report.matchAll(/^\s*ok \d+ - (.*) # (SKIP|TODO)\b(.*)$/gm)].map(
      (m) => `  ${m[2]} ${m[1]}${m[3]}`,
    );
    console.error(
      `\nCI: ${skipped} skipped and ${todo} todo test(s); under CI every test must run:\n${names.join('\n')}`,
    );
    status = status || 1;
  }
}
rmSync(scratch, { recursive: true, force: true });
console.error(
  `test run: ${files.length} file(s), ${((Date.now() - started) / 1000).toFixed(1)} s${ci ? ', CI' : ''}`,
);
process.exit(status);
