#!/usr/bin/env node
// Mutation testing of the security-critical modules with StrykerJS (its command runner over
// Node's own test runner). Each module is one Stryker run that mutates only that module and runs
// only the fast unit test files that cover it, so a mutant costs one short test process; the
// engine suite never runs here. Prints the score per module and the survivors at the end.
//
//   npm run mutation                 every module
//   npm run mutation -- crypto git   only the modules whose name contains one of the words
//
// Not part of `npm test`: it takes minutes. Reports land in reports/mutation/<module>.json
// (mutation-testing-report-schema) and .html.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync, rmSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const GOAL = 80;

// mutate: globs of source files; tests: compiled test files (relative to the sandbox root).
// lib/auth is split in three runs so that each reports on its own (and can be rerun alone).
// The unit tests of lib/auth, by concern; each auth run keeps all of them, as when they were one file.
const AUTH_UNIT = [
  'passwords',
  'throttle',
  'sessions',
  'tokens',
  'principal',
  'users',
  'setup-signing',
  'totp-enrolment',
].map((f) => `unit/auth/${f}`);
const MODULES = [
  {
    name: 'auth-throttle',
    mutate: ['lib/auth/passwords.ts', 'lib/auth/ratelimit.ts', 'lib/auth/guard.ts', 'lib/auth/cache.ts'],
    tests: AUTH_UNIT,
  },
  {
    name: 'auth-credentials',
    mutate: [
      'lib/auth/sessions.ts',
      'lib/auth/tokens.ts',
      'lib/auth/principal.ts',
      'lib/auth/stepup.ts',
      'lib/auth/users.ts',
      'lib/auth/login.ts',
    ],
    tests: AUTH_UNIT,
  },
  {
    name: 'auth-setup-2fa',
    mutate: ['lib/auth/setup.ts', 'lib/auth/signing.ts', 'lib/auth/totp.ts'],
    tests: [...AUTH_UNIT, 'unit/auth/totp'],
  },
  {
    name: 'crypto',
    mutate: ['lib/crypto/**/*.ts'],
    tests: ['unit/crypto/crypto', 'unit/crypto/crypto-unit'],
  },
  { name: 'webhooks-verify', mutate: ['lib/webhooks/verify.ts'], tests: ['unit/webhooks/verify'] },
  { name: 'compose-policy', mutate: ['lib/compose/policy.ts'], tests: ['unit/compose/parse'] },
  { name: 'git-validate', mutate: ['lib/git/validate.ts'], tests: ['unit/git/validate'] },
];

const filter = process.argv.slice(2);
const chosen = filter.length ? MODULES.filter((m) => filter.some((f) => m.name.includes(f))) : MODULES;
if (!chosen.length) {
  console.error(`no module matches ${filter.join(' ')}; modules: ${MODULES.map((m) => m.name).join(', ')}`);
  process.exit(1);
}
const concurrency = Number(process.env.SVC_MUTATION_CONCURRENCY ?? 2);
const out = join(root, 'reports', 'mutation');
mkdirSync(out, { recursive: true });
const stryker = join(root, 'node_modules', '@stryker-mutator', 'core', 'bin', 'stryker.js');
if (!existsSync(stryker)) {
  console.error('mutation: StrykerJS is not installed (npm install with dev dependencies)');
  process.exit(1);
}

const results = [];
const started = Date.now();
for (const m of chosen) {
  const files = m.tests.map((t) => `dist/tests/${t}.test.js`);
  for (const f of files) {
    if (!existsSync(join(root, f.replace(/^dist\//, '').replace(/\.js$/, '.ts')))) {
      console.error(`mutation: ${m.name}: no test file ${f}`);
      process.exit(1);
    }
  }
  const config = {
    $schema: './node_modules/@stryker-mutator/core/schema/stryker-schema.json',
    testRunner: 'command',
    // The build compiles the instrumented sources once per module (Stryker marks mutated files
    // @ts-nocheck); each mutant is then switched on by its id in the environment.
    buildCommand: `node ${join(root, 'node_modules', 'typescript', 'bin', 'tsc')} -p tsconfig.json`,
    commandRunner: { command: `node --test --test-concurrency=1 --test-reporter=dot ${files.join(' ')}` },
    mutate: m.mutate,
    coverageAnalysis: 'off',
    concurrency,
    timeoutMS: 20_000,
    ignorePatterns: ['dist', 'reports', 'data', '.stryker-tmp*', '.stryker-*.conf.json', '*.log'],
    tempDirName: `.stryker-tmp-${m.name}`,
    cleanTempDir: true,
    reporters: ['clear-text', 'json', 'html', 'progress-append-only'],
    clearTextReporter: { allowColor: false, logTests: false, reportScoreTable: true, reportMutants: false },
    jsonReporter: { fileName: join('reports', 'mutation', `${m.name}.json`) },
    htmlReporter: { fileName: join('reports', 'mutation', `${m.name}.html`) },
    logLevel: 'warn',
  };
  const configFile = join(root, `.stryker-${m.name}.conf.json`);
  writeFileSync(configFile, JSON.stringify(config, null, 2));
  const t0 = Date.now();
  console.error(`\n== ${m.name}: mutating ${m.mutate.join(' ')}; tests: ${files.join(' ')}`);
  const r = spawnSync(process.execPath, [stryker, 'run', configFile], { cwd: root, stdio: 'inherit' });
  rmSync(configFile, { force: true });
  const seconds = (Date.now() - t0) / 1000;
  if (r.status !== 0) {
    results.push({ name: m.name, error: `stryker exited ${r.status}`, seconds });
    continue;
  }
  const report = JSON.parse(readFileSync(join(out, `${m.name}.json`), 'utf8'));
  const count = {
    Killed: 0,
    Timeout: 0,
    Survived: 0,
    NoCoverage: 0,
    CompileError: 0,
    RuntimeError: 0,
    Ignored: 0,
  };
  const survivors = [];
  for (const [file, f] of Object.entries(report.files)) {
    for (const mu of f.mutants) {
      count[mu.status] = (count[mu.status] ?? 0) + 1;
      if (mu.status === 'Survived' || mu.status === 'NoCoverage') {
        survivors.push(
          `${file}:${mu.location.start.line}:${mu.location.start.column} ${mu.mutatorName}${mu.replacement !== undefined ? ` -> ${JSON.stringify(mu.replacement).slice(0, 80)}` : ''}`,
        );
      }
    }
  }
  const detected = count.Killed + count.Timeout;
  const valid = detected + count.Survived + count.NoCoverage;
  results.push({ name: m.name, ...count, score: valid ? (100 * detected) / valid : 100, survivors, seconds });
}

console.log(
  `\nmutation score per module (goal ${GOAL}% killed), ${((Date.now() - started) / 1000).toFixed(0)} s in all:`,
);
console.log('module            killed  timeout  survived  no-cov  score   time');
let short = false;
for (const r of results) {
  if (r.error) {
    console.log(`${r.name.padEnd(18)}${r.error}`);
    short = true;
    continue;
  }
  if (r.score < GOAL) short = true;
  console.log(
    `${r.name.padEnd(18)}${String(r.Killed).padStart(6)}${String(r.Timeout).padStart(9)}${String(r.Survived).padStart(10)}${String(r.NoCoverage).padStart(8)}${r.score.toFixed(1).padStart(7)}%${r.seconds.toFixed(0).padStart(6)} s`,
  );
}
for (const r of results) {
  if (r.survivors?.length) console.log(`\nsurvivors in ${r.name}:\n  ${r.survivors.join('\n  ')}`);
}
process.exit(short ? 1 : 0);
