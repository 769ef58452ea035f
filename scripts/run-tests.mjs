#!/usr/bin/env node
// Runs every compiled test file with Node's own runner in one invocation (one summary).
// `npm test -- auth` runs only the files whose path contains "auth".
//
// Under CI (tests/_support/ci.ts says what counts) a skipped or todo test fails the run: the
// gates already throw there, and this catches any skip that bypasses them. A second reporter
// writes TAP to a temporary file for that count; the first keeps the usual output.
//
// The whole suite (no filter) then runs its core again on PostgreSQL (SVC_TEST_DATABASE=postgres:
// every test app gets a database of its own on a throwaway server, tests/_support/postgres.ts).
// `--postgres [filter...]` runs only that pass, over the core files matching the filter.
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
const args = process.argv.slice(2);
const postgresOnly = args.includes('--postgres');
const filter = args.filter((a) => a !== '--postgres');
const all = find(dir);
let files = postgresOnly ? [] : all;
if (filter.length) files = files.filter((f) => filter.some((x) => f.includes(x)));
// The control database's core on PostgreSQL: auth, operators, apps and their settings (backup
// configurations included), webhooks and the deploy queue, audit and revert, the instance (its
// backup's metadata), optimistic concurrency, WebSocket authentication, alert rules and log
// drains, and the dialect checks.
const POSTGRES_CORE = [
  'unit/db/dialects.test.js',
  // Sign-in through an identity provider (api/auth/oidc) adds an OIDC server and no query of its own.
  'api/auth/auth.test.js',
  'api/auth/password.test.js',
  'api/auth/signin-change.test.js',
  'api/auth/token-scopes.test.js',
  'api/operators/operators.test.js',
  'api/apps/app-settings.test.js',
  'api/apps/webhooks.test.js',
  'api/apps/images.test.js',
  'api/registries/registries.test.js',
  'api/audit/revert.test.js',
  'api/instance/instance.test.js',
  // Variables with their ETag, a trigger's patch, the webhook delivery log, a channel's creation
  // and the host's metrics.
  'api/apps/env.test.js',
  'api/apps/triggers-patch.test.js',
  'api/apps/webhook-deliveries.test.js',
  'api/settings/notification-create.test.js',
  'api/host/metrics.test.js',
  // Alert rules with their outbox, and log drains (their tables, sealed columns and counters).
  'api/alerts/alerts.test.js',
  'api/log-drains/drains.test.js',
  'runtime/ws-auth.e2e.test.js',
];
const pgFiles =
  postgresOnly || !filter.length
    ? all.filter(
        (f) =>
          POSTGRES_CORE.some((c) => f.startsWith(join(dir, c))) &&
          (!postgresOnly || !filter.length || filter.some((x) => f.includes(x))),
      )
    : [];
// The route coverage check reads what the in-process API tests reached (tests/_support/request.ts
// records it under SVC_TEST_HITS): it runs after them, and selecting it selects them.
const coverage = join(dir, 'api', 'coverage.test.js');
const checksCoverage = files.includes(coverage);
if (checksCoverage)
  files = [...new Set([...files, ...all.filter((f) => f.startsWith(join(dir, 'api') + '/'))])].filter(
    (f) => f !== coverage,
  );
if (!files.length && !pgFiles.length) {
  console.error(`no test file matches ${filter.join(' ')}`);
  process.exit(1);
}
const ci = isCI();
const scratch = mkdtempSync(join(tmpdir(), 'svc-test-run-'));
const hits = join(scratch, 'hits');
mkdirSync(hits);
const taps = [];
// A safety net: a test file still running after 15 minutes fails (as "cancelled") instead of
// holding the run until CI's own limit. On Node 20 the runner applies --test-timeout to each file
// as a whole (and to each test in it): the longest files take about 5 minutes (the cluster ones,
// tests/cluster/swarm-deploy and e2e), so the bound leaves them three times their time. A file
// that finished its tests but left a handle open (a timer, a request loop) ends the same way.
const TEST_TIMEOUT = `--test-timeout=${15 * 60_000}`;
const started = Date.now();
let status = 0;
function runBatch(batch, env) {
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
  const r = spawnSync(
    process.execPath,
    ['--test', '--test-concurrency=2', TEST_TIMEOUT, ...reporters, ...batch],
    {
      stdio: 'inherit',
      env,
    },
  );
  status = status || (r.status ?? 1);
}
for (const batch of checksCoverage ? [files, [coverage]] : [files]) {
  if (!batch.length) continue;
  runBatch(batch, { ...process.env, SVC_TEST_HITS: hits });
}
let pgSummary = '';
if (pgFiles.length) {
  const { postgresMissing } = await import(
    new URL('../dist/tests/_support/postgres.js', import.meta.url).href
  );
  const { componentRequired } = await import(new URL('../dist/tests/_support/ci.js', import.meta.url).href);
  const problem = postgresMissing();
  if (problem && componentRequired('SVC_REQUIRE_POSTGRES')) {
    console.error(`\nthe PostgreSQL pass cannot run: ${problem}, and CI requires it`);
    status = status || 1;
  } else if (problem) {
    console.error(`\n*** SKIPPING the PostgreSQL pass (${pgFiles.length} files): ${problem} ***\n`);
    pgSummary = `, PostgreSQL pass skipped`;
  } else {
    const t0 = Date.now();
    console.error(`\nPostgreSQL pass: ${pgFiles.length} file(s) again on PostgreSQL`);
    // No route hits recorded: the coverage check is the first pass's.
    const { SVC_TEST_HITS: _unused, ...env } = process.env;
    runBatch(pgFiles, { ...env, SVC_TEST_DATABASE: 'postgres' });
    pgSummary = `; PostgreSQL pass: ${pgFiles.length} file(s), ${((Date.now() - t0) / 1000).toFixed(1)} s`;
  }
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
  `test run: ${files.length} file(s), ${((Date.now() - started) / 1000).toFixed(1)} s${pgSummary}${ci ? ', CI' : ''}`,
);
process.exit(status);
