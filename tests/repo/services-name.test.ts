// The services registry is imported under its own name, `Services`, never renamed to `Env`: that
// word means process variables in lib/config.ts and an app's variables elsewhere
// (docs/architecture.md, "The services").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
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

/** The files that import the services type under another name. */
export function renamedServices(files: ReadonlyArray<{ file: string; text: string }>): string[] {
  return files.filter((f) => /\bServices\s+as\s+\w+/.test(f.text)).map((f) => f.file);
}

test('the services registry is imported as Services, never renamed', () => {
  const self = 'tests/repo/services-name.test.ts';
  const files = ['lib', 'runtime', 'handlers', 'bench', 'tests']
    .flatMap(sources)
    .filter((f) => f !== self)
    .map((file) => ({
      file,
      text: readFileSync(join(root, file), 'utf8'),
    }));
  assert.ok(files.length > 300, 'the sources were read');
  assert.deepEqual(
    renamedServices(files),
    [],
    'import type { Services } from lib/http/handler.ts and call it Services (docs/architecture.md)',
  );
});

test('the check sees a renamed import and leaves the plain one alone', () => {
  assert.deepEqual(
    renamedServices([
      { file: 'a.ts', text: "import type { Services as Env } from '../http/handler.js';" },
      { file: 'b.ts', text: "import type { Services } from '../http/handler.js';" },
    ]),
    ['a.ts'],
  );
});
