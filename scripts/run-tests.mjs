#!/usr/bin/env node
// Runs every compiled test file with Node's own runner in one invocation (one summary).
// `npm test -- auth` runs only the files whose path contains "auth".
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

const dir = new URL('../dist/tests/', import.meta.url).pathname;
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
let files = find(dir);
if (filter.length) files = files.filter((f) => filter.some((x) => f.includes(x)));
const r = spawnSync(process.execPath, ['--test', '--test-concurrency=2', ...files], { stdio: 'inherit' });
process.exit(r.status ?? 1);
