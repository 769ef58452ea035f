#!/usr/bin/env node
// Builds dist/ (route table, then tsc) and stamps it. `--if-stale` builds only when a source is
// newer than the stamp, so `npm start` runs what was compiled at install (the `prepare` script)
// and answers in well under a second instead of compiling on every start.
// The dashboard (dashboard/, Vite) has its own stamp and is rebuilt only when its sources changed,
// so `npm install` builds it once and neither `npm start` nor `npm test` pays for it again.
import { existsSync, readdirSync, statSync, writeFileSync, mkdirSync, rmSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const root = fileURLToPath(new URL('..', import.meta.url));
const stamp = join(root, 'dist', '.build-stamp');
const SOURCE_DIRS = ['client', 'handlers', 'lib', 'runtime', 'tests', 'bench'];
const SOURCE_FILES = ['tsconfig.json', 'package.json', 'scripts/gen-routes.mjs', 'scripts/gen-openapi.mjs'];

function newestSource() {
  let newest = 0;
  const visit = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const full = join(dir, e.name);
      if (e.isDirectory()) visit(full);
      else if (e.name.endsWith('.ts')) newest = Math.max(newest, statSync(full).mtimeMs);
    }
  };
  for (const d of SOURCE_DIRS) if (existsSync(join(root, d))) visit(join(root, d));
  for (const f of SOURCE_FILES)
    if (existsSync(join(root, f))) newest = Math.max(newest, statSync(join(root, f)).mtimeMs);
  return newest;
}

/** Outputs whose source is gone (a deleted test would otherwise still run from dist/). */
function removeOrphans() {
  const visit = (dir, srcDir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const full = join(dir, e.name);
      if (e.isDirectory()) {
        if (!existsSync(join(srcDir, e.name))) rmSync(full, { recursive: true, force: true });
        else visit(full, join(srcDir, e.name));
        continue;
      }
      const m = /^(.*)\.(js|js\.map|d\.ts)$/.exec(e.name);
      if (m && !existsSync(join(srcDir, `${m[1]}.ts`))) rmSync(full, { force: true });
    }
  };
  for (const d of SOURCE_DIRS)
    if (existsSync(join(root, 'dist', d))) visit(join(root, 'dist', d), join(root, d));
}

function isStale() {
  if (!existsSync(stamp) || !existsSync(join(root, 'dist', 'runtime', 'cli.js'))) return true;
  return newestSource() > statSync(stamp).mtimeMs;
}

function step(args) {
  const r = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

const dashboardDir = join(root, 'dashboard');
const dashboardOut = join(root, 'dist', 'dashboard');
const dashboardStamp = join(root, 'dist', '.dashboard-stamp');

function newestDashboardSource() {
  let newest = 0;
  const visit = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.name === 'node_modules' || e.name.startsWith('.')) continue;
      const full = join(dir, e.name);
      if (e.isDirectory()) visit(full);
      else newest = Math.max(newest, statSync(full).mtimeMs);
    }
  };
  visit(dashboardDir);
  return newest;
}

function buildDashboard() {
  if (!existsSync(dashboardDir)) return;
  const fresh =
    existsSync(dashboardStamp) &&
    existsSync(join(dashboardOut, 'index.html')) &&
    newestDashboardSource() <= statSync(dashboardStamp).mtimeMs;
  if (fresh) return;
  let vite;
  try {
    vite = join(dirname(createRequire(import.meta.url).resolve('vite/package.json')), 'bin', 'vite.js');
  } catch {
    console.error(
      'build: Vite is not installed; the dashboard is not built (run `npm install` with dev dependencies)',
    );
    return;
  }
  const tscBin = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  step([tscBin, '-p', join(dashboardDir, 'tsconfig.json')]);
  step([vite, 'build', '--config', join(dashboardDir, 'vite.config.ts'), '--logLevel', 'warn']);
  mkdirSync(join(root, 'dist'), { recursive: true });
  writeFileSync(dashboardStamp, new Date().toISOString() + '\n');
}

if (process.argv.includes('--if-stale') && !isStale()) {
  buildDashboard();
  process.exit(0);
}
let tsc;
try {
  tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
} catch {
  console.error('build: TypeScript is not installed (run `npm install` with dev dependencies)');
  process.exit(1);
}
step([join(root, 'scripts', 'gen-routes.mjs')]);
step([tsc, '-p', join(root, 'tsconfig.json')]);
// The OpenAPI document and the client types come from the compiled routes; when they change, the
// handler that serves the document and the client are compiled again against them.
const outputs = [join(root, 'api', 'openapi.json'), join(root, 'client', 'types.ts')];
const before = outputs.map((f) => (existsSync(f) ? statSync(f).mtimeMs : 0)).join();
step([join(root, 'scripts', 'gen-openapi.mjs')]);
if (outputs.map((f) => (existsSync(f) ? statSync(f).mtimeMs : 0)).join() !== before)
  step([tsc, '-p', join(root, 'tsconfig.json')]);
mkdirSync(join(root, 'dist'), { recursive: true });
removeOrphans();
writeFileSync(stamp, new Date().toISOString() + '\n');
buildDashboard();
