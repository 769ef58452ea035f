#!/usr/bin/env node
// Rewrites the configuration table of docs/operating.md from the list of variables
// (lib/config/vars.ts, compiled: run `node scripts/build.mjs` first). tests/repo/config-docs.test.ts
// fails while the table and the list differ.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const { configDocsRows } = await import(new URL('../dist/lib/config/vars.js', import.meta.url).href);
const file = `${root}docs/operating.md`;
const HEADER = '| Variable | Default | Meaning |\n|---|---|---|\n';

const text = readFileSync(file, 'utf8');
const start = text.indexOf(HEADER);
if (start < 0) throw new Error(`docs/operating.md has no "${HEADER.split('\n')[0]}" table`);
const body = start + HEADER.length;
const end = text.indexOf('\n\n', body);
const next = `${text.slice(0, body)}${configDocsRows().join('\n')}${text.slice(end)}`;
if (next === text) console.log('docs/operating.md: the configuration table is up to date');
else {
  writeFileSync(file, next);
  console.log('docs/operating.md: configuration table rewritten');
}
