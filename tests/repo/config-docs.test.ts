// The configuration table of docs/operating.md is the list of variables (lib/config/vars.ts), row
// for row: a variable added, renamed or re-described in the list fails here until the docs follow
// (`node scripts/gen-config-docs.mjs` rewrites the table; the message also prints it to paste).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { CONFIG_VARS, configDocsRows } from '#lib/config/vars.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const HEADER = '| Variable | Default | Meaning |\n|---|---|---|\n';

function documentedRows(): string[] {
  const text = readFileSync(`${root}docs/operating.md`, 'utf8');
  const start = text.indexOf(HEADER);
  assert.ok(start >= 0, 'docs/operating.md has the configuration table');
  const body = start + HEADER.length;
  return text.slice(body, text.indexOf('\n\n', body)).split('\n');
}

test('docs/operating.md lists every variable as lib/config/vars.ts declares it', () => {
  const expected = configDocsRows();
  assert.deepEqual(
    documentedRows(),
    expected,
    `the configuration table of docs/operating.md differs from lib/config/vars.ts; run ` +
      `\`node scripts/gen-config-docs.mjs\` or paste:\n\n${HEADER}${expected.join('\n')}\n`,
  );
});

test('each variable is declared once, and the default column says what an unset variable means', () => {
  const names = CONFIG_VARS.map((v) => v.name);
  assert.deepEqual(
    names.filter((n, i) => names.indexOf(n) !== i),
    [],
  );
  const rows = configDocsRows([
    { name: 'SVC_A', default: '5', doc: 'a' },
    { name: 'SVC_B', doc: 'b' },
    { name: 'SVC_C', default: '', doc: 'c' },
    { name: 'SVC_D', default: '{}', shown: 'none', doc: 'd' },
  ]);
  assert.deepEqual(rows, [
    '| `SVC_A` | `5` | a |',
    '| `SVC_B` | — | b |',
    '| `SVC_C` | — | c |',
    '| `SVC_D` | none | d |',
  ]);
});

test('a variable lands in the configuration, is read with others, or names the file that reads it', () => {
  const grouped = CONFIG_VARS.filter((v) => !('key' in v) && !('readBy' in v)).map((v) => v.name);
  assert.ok(
    grouped.every((n) => n.startsWith('SVC_OIDC_')),
    `unplaced: ${grouped.join(', ')}`,
  );
  for (const v of CONFIG_VARS) {
    if ('readBy' in v) {
      const source = readFileSync(`${root}${v.readBy}`, 'utf8');
      assert.ok(source.includes(v.name), `${v.readBy} reads ${v.name}`);
    } else assert.ok('parse' in v, `${v.name} has a parser`);
  }
});
