#!/usr/bin/env node
// Builds dist/ (route table, then tsc) and stamps it. `--if-stale` builds only when a source is
// newer than the stamp, so `npm start` runs what was compiled at install (the `prepare` script)
// and answers in well under a second instead of compiling on every start.
import { existsSync, readdirSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
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
  for (const f of SOURCE_FILES) if (existsSync(join(root, f))) newest = Math.max(newest, statSync(join(root, f)).mtimeMs);
  return newest;
}

function isStale() {
  if (!existsSync(stamp) || !existsSync(join(root, 'dist', 'runtime', 'cli.js'))) return true;
  return newestSource() > statSync(stamp).mtimeMs;
}

function step(args) {
  const r = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

if (process.argv.includes('--if-stale') && !isStale()) process.exit(0);
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
if (outputs.map((f) => (existsSync(f) ? statSync(f).mtimeMs : 0)).join() !== before) step([tsc, '-p', join(root, 'tsconfig.json')]);
mkdirSync(join(root, 'dist'), { recursive: true });
writeFileSync(stamp, new Date().toISOString() + '\n');
