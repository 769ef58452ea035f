// The layers of docs/architecture.md, checked over the source's imports: runtime -> handlers -> lib,
// lib knows neither handlers nor the runtime, a handler reaches Docker, SQL and the filesystem
// only through lib/, and the client stands apart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../../', import.meta.url));

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(join(root, dir), { withFileTypes: true })) {
    const rel = join(dir, e.name);
    if (e.isDirectory()) out.push(...sources(rel));
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(rel);
  }
  return out;
}

/** Every module a file imports, statically or dynamically, type-only imports included. */
export function importsOf(text: string): string[] {
  const specs = new Set<string>();
  for (const m of text.matchAll(/(?:^|[^\w.])(?:import|export)\s[^'"`;]*?from\s*['"]([^'"]+)['"]/gm))
    specs.add(m[1]!);
  for (const m of text.matchAll(/(?:^|[^\w.])import\s*\(?\s*['"]([^'"]+)['"]/gm)) specs.add(m[1]!);
  return [...specs];
}

/** The top-level folder a relative import lands in, or the package name of a bare one. */
function target(file: string, spec: string): { layer?: string; pkg?: string } {
  // `#lib/...` is package.json's alias of lib/ (subpath imports).
  if (spec.startsWith('#lib/')) return { layer: 'lib' };
  if (!spec.startsWith('.'))
    return {
      pkg: spec.startsWith('@')
        ? spec.split('/').slice(0, 2).join('/')
        : spec.split('/')[0]!.replace(/^node:/, 'node:'),
    };
  const abs = resolve(root, dirname(file), spec);
  return { layer: relative(root, abs).split(sep)[0] };
}

const RULES: {
  from: string;
  forbidden: (t: { layer?: string; pkg?: string }, spec: string) => boolean;
  why: string;
}[] = [
  {
    from: 'lib',
    forbidden: (t) => t.layer === 'handlers' || t.layer === 'runtime' || t.layer === 'client',
    why: 'lib/ knows nothing of handlers/, runtime/ or the client',
  },
  {
    from: 'handlers',
    forbidden: (t, spec) =>
      t.layer === 'runtime' ||
      ['dockerode', 'kysely', 'better-sqlite3'].includes(t.pkg ?? '') ||
      /^(node:)?fs(\/promises)?$/.test(spec),
    why: 'a handler calls lib/ for Docker, SQL and files',
  },
  {
    from: 'client',
    forbidden: (t) => t.layer === 'lib' || t.layer === 'handlers' || t.layer === 'runtime',
    why: 'the client only knows the generated types',
  },
];

export function violations(files: { file: string; text: string }[]): string[] {
  const out: string[] = [];
  for (const { file, text } of files) {
    const layer = file.split(/[\\/]/)[0];
    for (const rule of RULES.filter((r) => r.from === layer)) {
      for (const spec of importsOf(text))
        if (rule.forbidden(target(file, spec), spec)) out.push(`${file} imports ${spec}: ${rule.why}`);
    }
  }
  return out;
}

test('no import crosses a layer the wrong way', () => {
  const files = ['lib', 'handlers', 'client']
    .flatMap(sources)
    .map((file) => ({ file, text: readFileSync(join(root, file), 'utf8') }));
  assert.ok(files.length > 150, `read ${files.length} files`);
  assert.deepEqual(violations(files), []);
});

/** Imports from outside lib/ that reach into it by a relative path instead of the `#lib/` alias. */
export function relativeIntoLib(files: { file: string; text: string }[]): string[] {
  return files.flatMap(({ file, text }) =>
    importsOf(text)
      .filter((spec) => spec.startsWith('.') && target(file, spec).layer === 'lib')
      .map((spec) => `${file} imports ${spec}: use '#lib/...'`),
  );
}

test('code outside lib/ imports it through the #lib/ alias, never ../../lib', () => {
  const files = ['handlers', 'runtime', 'tests', 'bench']
    .flatMap((d) => sources(d))
    .map((file) => ({ file, text: readFileSync(join(root, file), 'utf8') }));
  assert.deepEqual(relativeIntoLib(files), []);
  assert.deepEqual(
    relativeIntoLib([
      { file: 'handlers/api/x.ts', text: `import { a } from '../../${'lib'}/apps/store.js';` },
    ]),
    ["handlers/api/x.ts imports ../../lib/apps/store.js: use '#lib/...'"],
  );
});

test('the check catches each kind of crossing', () => {
  const bad = [
    { file: 'lib/apps/x.ts', text: "import { routes } from '../../runtime/routes.gen.js';" },
    { file: 'lib/apps/y.ts', text: "const h = await import('../../handlers/api/health.js');" },
    { file: 'handlers/api/x.ts', text: "import Docker from 'dockerode';" },
    { file: 'handlers/api/y.ts', text: "import type { Kysely } from 'kysely';" },
    { file: 'handlers/api/z.ts', text: "import { readFile } from 'node:fs/promises';" },
    { file: 'handlers/api/w.ts', text: "import { readFileSync } from 'fs';" },
    { file: 'client/x.ts', text: "import type { App } from '../lib/apps/model.js';" },
  ];
  assert.equal(violations(bad).length, bad.length, violations(bad).join('\n'));
  assert.deepEqual(
    violations([
      {
        file: 'handlers/api/ok.ts',
        text: "import { getApp } from '#lib/apps/store.js';\nimport { z } from 'zod';",
      },
    ]),
    [],
  );
});

/** Relative imports of lib/ files that land in lib/, as a graph of repository paths. */
export function libGraph(files: { file: string; text: string }[]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const { file, text } of files) {
    const deps: string[] = [];
    for (const spec of importsOf(text)) {
      if (!spec.startsWith('.') && !spec.startsWith('#lib/')) continue;
      const path = spec.startsWith('#lib/')
        ? join('lib', spec.slice(5))
        : relative(root, resolve(root, dirname(file), spec));
      const to = path.split(sep).join('/').replace(/\.js$/, '.ts');
      if (to.startsWith('lib/')) deps.push(to);
    }
    graph.set(file.split(sep).join('/'), deps);
  }
  return graph;
}

/** Strongly connected groups of more than one module (or a module importing itself), sorted. */
export function cycles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const group: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      group.push(w);
    } while (w !== v);
    if (group.length > 1 || graph.get(v)!.includes(v)) out.push(group.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out.sort((a, b) => a[0]!.localeCompare(b[0]!));
}

// Type-only and dynamic imports count: a type cycle still ties the modules' meanings together
// (a service container once named the deployment class whose pipeline takes it), and a lazy import
// is still a dependency, deferred only to keep boot light.
test('no import cycle inside lib/, type-only and dynamic imports included', () => {
  const files = sources('lib').map((file) => ({ file, text: readFileSync(join(root, file), 'utf8') }));
  const found = cycles(libGraph(files));
  assert.deepEqual(
    found.map((c) => c.join(' -> ')),
    [],
    `import cycles in lib/:\n${found.map((c) => `  ${c.join(', ')}`).join('\n')}`,
  );
});

test('the cycle check finds type-only and dynamic cycles, and passes a tree without one', () => {
  const f = (file: string, text: string) => ({ file, text });
  const typeCycle = [
    f('lib/env.ts', "import type { DeployService } from './deploy/service.js';"),
    f('lib/deploy/service.ts', "import type { Env } from '../env.js';"),
  ];
  assert.deepEqual(cycles(libGraph(typeCycle)), [['lib/deploy/service.ts', 'lib/env.ts']]);
  const lazy = [
    f('lib/a.ts', "import { b } from './b.js';"),
    f('lib/b.ts', "const { c } = await import('./c.js');"),
    f('lib/c.ts', "export { a } from './a.js';"),
  ];
  assert.deepEqual(cycles(libGraph(lazy)), [['lib/a.ts', 'lib/b.ts', 'lib/c.ts']]);
  const acyclic = [
    f('lib/env.ts', "import type { Deployments } from './deploy/types.js';"),
    f('lib/deploy/types.ts', "import type { App } from '../apps/model.js';"),
    f('lib/apps/model.ts', ''),
  ];
  assert.deepEqual(cycles(libGraph(acyclic)), []);
});

/** lib/ as a graph of folders (`lib/apps/x.ts` -> `apps`; a file directly in lib/ is its own folder). */
export function folderGraph(files: { file: string; text: string }[]): Map<string, string[]> {
  const folderOf = (path: string) => path.split('/')[1]!.replace(/\.ts$/, '');
  const graph = new Map<string, Set<string>>();
  for (const [file, deps] of libGraph(files)) {
    const from = folderOf(file);
    const set = graph.get(from) ?? new Set<string>();
    for (const to of deps) if (folderOf(to) !== from) set.add(folderOf(to));
    graph.set(from, set);
  }
  return new Map([...graph].map(([k, v]) => [k, [...v].sort()]));
}

/** The folders every product area may use; they use none of them (boot wires them together). */
const INFRASTRUCTURE = new Set(['db', 'crypto', 'http', 'util', 'events', 'config', 'log']);

test('infrastructure folders import no product area, type-only and dynamic imports included', () => {
  const files = sources('lib').map((file) => ({ file, text: readFileSync(join(root, file), 'utf8') }));
  const graph = folderGraph(files);
  for (const f of INFRASTRUCTURE) assert.ok(graph.has(f), `lib/${f} exists`);
  const wrong = [...graph].flatMap(([from, tos]) =>
    INFRASTRUCTURE.has(from) ? tos.filter((t) => !INFRASTRUCTURE.has(t)).map((t) => `${from} -> ${t}`) : [],
  );
  assert.deepEqual(wrong, []);
});

// No folder of lib/ is in an import cycle, type-only and dynamic imports included, so the areas
// can be read bottom-up. Services reach an area through the registry in lib/http/handler.ts (each
// area declares its own), not through a list that names every area.
test('no folder of lib/ is in an import cycle', () => {
  const files = sources('lib').map((file) => ({ file, text: readFileSync(join(root, file), 'utf8') }));
  const found = cycles(folderGraph(files));
  assert.deepEqual(
    found.map((c) => c.join(', ')),
    [],
    `folders in an import cycle:\n${found.map((c) => `  ${c.join(', ')}`).join('\n')}`,
  );
});

test('the folder checks catch an infrastructure folder importing a product area, and a new folder cycle', () => {
  const f = (file: string, text: string) => ({ file, text });
  const tree = [
    f('lib/http/x.ts', "import type { App } from '../apps/model.js';"),
    f('lib/apps/model.ts', "import { HttpError } from '../http/errors.js';"),
    f('lib/http/errors.ts', ''),
  ];
  const graph = folderGraph(tree);
  assert.deepEqual(graph.get('http'), ['apps']);
  assert.deepEqual(cycles(graph), [['apps', 'http']]);
  assert.deepEqual(
    cycles(
      folderGraph([
        f('lib/config.ts', "import { x } from './util/hostname.js';"),
        f('lib/util/hostname.ts', ''),
      ]),
    ),
    [],
  );
});

// SQL lives in stores: an area's `store.ts` or `<x>-store.ts` holds its queries (Kysely builders,
// the `sql` tag, hot statements), and everything else calls those by name. lib/db/ is the database
// itself (connections, the hot statements' cache, the health ping) and its migrations.
const STORE = /(^|\/)(store|[a-z0-9-]+-store)\.ts$/;
const DATABASE_ITSELF = /^lib\/db\/(index\.ts$|migrations\/)/;
const QUERY =
  /\.(selectFrom|selectNoFrom|insertInto|updateTable|deleteFrom|replaceInto|mergeInto)\s*\(|\bsql\s*(<[^`;]*?>)?\s*`|\b(hotGet|hotRun)\s*(<[^>(]*>)?\s*\(|\.prepare\s*\(/;

/**
 * Files outside stores that still query, each with why. Only shrinks: an entry that no longer
 * queries fails the test below until it is removed.
 */
const QUERIES_OUTSIDE_STORES: Record<string, string> = {
  // The inventory of every area's sealed columns (boot samples it to check the master key) and
  // re-sealing them all: statements built from that one list, not any one area's rows.
  'lib/instance/sealed-rows.ts': 'one list of sealed columns across all areas, read by boot and rekey',
  'lib/instance/rekey.ts':
    'every sealed column re-sealed in one synchronous SQLite transaction on the raw connection; split per store it would no longer be one transaction',
};

/** Files outside stores (and outside lib/db's own) whose text runs a query. */
export function queriesOutsideStores(files: { file: string; text: string }[]): string[] {
  return files
    .map(({ file, text }) => ({ file: file.split(sep).join('/'), text }))
    .filter(({ file, text }) => !STORE.test(file) && !DATABASE_ITSELF.test(file) && QUERY.test(text))
    .map(({ file }) => file)
    .sort();
}

test('SQL only in stores: no file outside an area store runs a query', () => {
  const files = ['lib', 'handlers', 'runtime']
    .flatMap(sources)
    .map((file) => ({ file, text: readFileSync(join(root, file), 'utf8') }));
  assert.deepEqual(queriesOutsideStores(files), Object.keys(QUERIES_OUTSIDE_STORES).sort());
});

test('the store check catches each way of querying, and lets stores and lib/db be', () => {
  const f = (file: string, text: string) => ({ file, text });
  const bad = [
    f('handlers/api/x.ts', "const r = await env.db.selectFrom('apps').selectAll().execute();"),
    f('lib/apps/ops.ts', "await tx\n  .updateTable('apps')\n  .set({ status })"),
    f('lib/audit/index.ts', 'const q = sql<boolean>`a = b`;'),
    f('lib/auth/sessions.ts', "hotRun(db, 'delete from sessions where id = ?', id);"),
    f('lib/auth/tokens.ts', 'hotGet<TokenRow>(db, TOKEN_LOOKUP, hash);'),
    f('lib/series/query.ts', "seriesConnection(db).prepare('select 1');"),
    f('runtime/x.ts', "await db.deleteFrom('sessions').execute();"),
  ];
  assert.deepEqual(queriesOutsideStores(bad), bad.map((b) => b.file).sort());
  const ok = [
    f('lib/apps/store.ts', "db.selectFrom('apps')"),
    f('lib/apps/env-store.ts', "db.insertInto('app_env')"),
    f('lib/db/index.ts', 'sql`select 1`'),
    f('lib/db/migrations/0001_foundation.ts', "db.schema.createTable('apps')"),
    f('lib/apps/ops.ts', "import { getApp } from './store.js';\nawait getApp(env.db, id);"),
    f('lib/deploy/pipeline.ts', 'const selected = items.filter((i) => i.selected);'),
  ];
  assert.deepEqual(queriesOutsideStores(ok), []);
});
