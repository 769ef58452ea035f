// Inside lib/, files import each other by relative paths, never through the `#lib/` alias that code
// outside lib/ uses (docs/architecture.md, "How a file names a file of lib/"; the outside half is
// checked in tests/repo/layering.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../../', import.meta.url));

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(join(root, dir), { withFileTypes: true })) {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) out.push(...sources(rel));
    else if (/\.tsx?$/.test(e.name)) out.push(rel);
  }
  return out;
}

/** Each `#lib/` import of a lib/ file (static, re-export, dynamic or type-only), with what to write instead. */
export function aliasInsideLib(file: string, text: string): string[] {
  const specs = [
    ...text.matchAll(/(?:^|[^\w.])(?:import|export)\s[^'"`;]*?from\s*['"](#lib\/[^'"]+)['"]/gm),
    ...text.matchAll(/(?:^|[^\w.])import\s*\(?\s*['"](#lib\/[^'"]+)['"]/gm),
  ].map((m) => m[1]!);
  return [...new Set(specs)].map((spec) => {
    const rel = relative(dirname(file), join('lib', spec.slice(5)))
      .split('\\')
      .join('/');
    return `${file} imports ${spec}: inside lib/ write '${rel.startsWith('.') ? rel : `./${rel}`}'`;
  });
}

test('lib/ imports its own files by relative paths, not through #lib/', () => {
  const files = sources('lib');
  assert.ok(files.length > 150, `read ${files.length} files`);
  assert.deepEqual(
    files.flatMap((f) => aliasInsideLib(f, readFileSync(join(root, f), 'utf8'))),
    [],
  );
});

test('the check catches each form of import and leaves comments and relative imports alone', () => {
  const text = [
    "import { a } from '#lib/apps/store.js';",
    "export { b } from '#lib/http/route.js';",
    "import type { C } from '#lib/db/index.js';",
    "const d = await import('#lib/deploy/pipeline.js');",
    "import { e } from '../apps/store.js';",
    '// package.json maps `#lib/*` onto dist/lib',
  ].join('\n');
  assert.deepEqual(
    aliasInsideLib('lib/x/y.ts', text).map((s) => s.split(' ').slice(2).join(' ')),
    [
      "#lib/apps/store.js: inside lib/ write '../apps/store.js'",
      "#lib/http/route.js: inside lib/ write '../http/route.js'",
      "#lib/db/index.js: inside lib/ write '../db/index.js'",
      "#lib/deploy/pipeline.js: inside lib/ write '../deploy/pipeline.js'",
    ],
  );
  assert.deepEqual(aliasInsideLib('lib/x/y/z.ts', "import { a } from '#lib/x/w.js';"), [
    "lib/x/y/z.ts imports #lib/x/w.js: inside lib/ write '../w.js'",
  ]);
});
