// Nothing names what is gone: every repository path written in the docs (docs/*.md, README.md,
// wrangler-free.md) and in the comments of the source (.ts, .tsx, .mjs) names a file or folder
// that exists. A path is a word starting with one of the top-level folders below (`lib/apps/store.ts`,
// `tests/repo/`, `#lib/http/route.js`, `dist/runtime/cli.js`); a compiled name maps to its source
// (`.js` -> `.ts`/`.tsx`, `dist/x` -> `x`), and a placeholder (`<area>`, `*`, `{a,b}`, `...`, `X`
// as a whole segment) checks only the folder before it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const FOLDERS = ['lib', 'runtime', 'handlers', 'tests', 'docs', 'bench', 'scripts', 'dashboard', 'client'];
// Build output, vendored and generated trees: not read (their paths are not ours to keep).
const SKIP = new Set(['node_modules', 'dist', 'data', 'coverage', 'reports', 'test-artifacts']);
const GENERATED = new Set(['runtime/routes.gen.ts', 'client/types.ts']);

const PATH = new RegExp(
  String.raw`(?<![\w./@-])#?(?:dist/)?(?:${FOLDERS.join('|')})/[\w.\-\[\]<>*{},/]*`,
  'g',
);

/** The repository paths a piece of text names, as written (trailing punctuation trimmed). */
export function pathsIn(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(PATH)) {
    let p = m[0].replace(/[.,:]+$/, '');
    // A closing bracket or brace that opens nowhere in the path is the prose's, not the path's.
    while (/[\]}]$/.test(p) && count(p, p.endsWith(']') ? '[' : '{') < count(p, p.at(-1)!))
      p = p.slice(0, -1);
    out.push(p);
  }
  return out;
}

function count(s: string, c: string): number {
  return s.split(c).length - 1;
}

const isPlaceholder = (segment: string) =>
  /[<>*{}]/.test(segment) || /^\.\.\.?$/.test(segment) || /^([A-Z]|[a-z](\.\w+)?)$/.test(segment);

/**
 * Whether a written path names something in the tree: `tree` holds every file, and every folder
 * with a trailing slash. A path without an extension may name a folder, a file by its stem, or the
 * files it starts (`tests/engine/images-registry` as a run-tests filter).
 */
export function exists(written: string, tree: ReadonlySet<string>): boolean {
  const path = written.replace(/^#/, '').replace(/^dist\//, '');
  const segments = path.split('/');
  const cut = segments.findIndex(isPlaceholder);
  if (cut >= 0) return tree.has(segments.slice(0, cut).join('/') + '/');
  if (path.endsWith('/')) return tree.has(path);
  const candidates = [path];
  if (/\.m?js$/.test(path)) candidates.push(path.replace(/\.m?js$/, '.ts'), path.replace(/\.m?js$/, '.tsx'));
  if (/\.js\.map$/.test(path)) candidates.push(path.replace(/\.js\.map$/, '.ts'));
  if (candidates.some((c) => tree.has(c))) return true;
  if (tree.has(`${path}/`)) return true;
  for (const f of tree) if (f.startsWith(`${path}.`)) return true;
  return false;
}

/** Files under a folder (build output and dependencies left out); `folders` also gets the folders. */
function walk(dir: string, keep: (name: string) => boolean, folders?: string[]): string[] {
  const out: string[] = [];
  for (const e of readdirSync(join(root, dir), { withFileTypes: true })) {
    if (SKIP.has(e.name) || e.name.startsWith('.')) continue;
    const rel = dir ? `${dir}/${e.name}` : e.name;
    if (e.isDirectory()) {
      folders?.push(`${rel}/`);
      out.push(...walk(rel, keep, folders));
    } else if (keep(e.name)) out.push(rel);
  }
  return out;
}

/** The comments of one source file, each with the line it starts on. */
export function commentsOf(file: string, text: string): { line: number; text: string }[] {
  const kind = file.endsWith('.tsx')
    ? ts.ScriptKind.TSX
    : file.endsWith('.ts')
      ? ts.ScriptKind.TS
      : ts.ScriptKind.JS;
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, kind);
  const seen = new Set<number>();
  const out: { line: number; text: string }[] = [];
  const take = (ranges: ts.CommentRange[] | undefined) => {
    for (const r of ranges ?? []) {
      if (seen.has(r.pos)) continue;
      seen.add(r.pos);
      out.push({ line: sf.getLineAndCharacterOfPosition(r.pos).line + 1, text: text.slice(r.pos, r.end) });
    }
  };
  const visit = (node: ts.Node) => {
    take(ts.getLeadingCommentRanges(text, node.pos));
    take(ts.getTrailingCommentRanges(text, node.end));
    ts.forEachChild(node, visit);
  };
  visit(sf);
  take(ts.getLeadingCommentRanges(text, sf.endOfFileToken.pos));
  return out;
}

/** Every written path that names nothing, as `file:line: path`. */
export function stale(): string[] {
  const folders: string[] = [];
  const tree = new Set([...walk('', () => true, folders), ...folders]);
  const texts: { file: string; line: number; text: string }[] = [];
  const docs = ['README.md', 'wrangler-free.md', ...walk('docs', (n) => n.endsWith('.md'))];
  for (const file of docs)
    readFileSync(join(root, file), 'utf8')
      .split('\n')
      .forEach((text, i) => texts.push({ file, line: i + 1, text }));
  const code = FOLDERS.flatMap((d) => walk(d, (n) => /\.(tsx?|mjs)$/.test(n) && !n.endsWith('.d.ts'))).filter(
    (f) => !GENERATED.has(f),
  );
  for (const file of code)
    for (const c of commentsOf(file, readFileSync(join(root, file), 'utf8')))
      c.text.split('\n').forEach((text, i) => texts.push({ file, line: c.line + i, text }));
  // A Markdown link's target is relative to the document (`docs/dashboard.md` shows `dashboard/x.png`).
  const linked = (file: string, text: string, p: string) =>
    file.endsWith('.md') && text.includes(`](${p}`) && exists(join(dirname(file), p), tree);
  return texts.flatMap(({ file, line, text }) =>
    pathsIn(text)
      .filter((p) => !exists(p, tree) && !linked(file, text, p))
      .map((p) => `${file}:${line}: ${p}`),
  );
}

test('every repository path in the docs and in comments exists', () => {
  const found = stale();
  assert.ok(
    found.length === 0,
    `paths that name nothing (${found.length}):\n${found.join('\n')}\n` +
      'Write the path the file has now (git log --follow, or git log --diff-filter=R --name-status, ' +
      'finds where it went), or drop the mention if the file is gone. A placeholder segment ' +
      '(<name>, *, ...) checks only the folder before it.',
  );
});

test('the path check reads paths as written, maps compiled names, and skips placeholders', () => {
  assert.deepEqual(
    pathsIn(
      'see `lib/apps/store.ts`, (tests/repo/). #lib/http/route.js and dist/runtime/cli.js; ../lib/x.ts',
    ),
    ['lib/apps/store.ts', 'tests/repo/', '#lib/http/route.js', 'dist/runtime/cli.js'],
  );
  assert.deepEqual(pathsIn('handlers/api/apps/[id]/env/index.ts] https://x.dev/docs/a'), [
    'handlers/api/apps/[id]/env/index.ts',
  ]);
  const tree = new Set([
    'lib/apps/store.ts',
    'lib/',
    'lib/apps/',
    'runtime/cli.ts',
    'docs/api.md',
    'tests/',
    'tests/engine/',
    'tests/engine/images-registry.e2e.test.ts',
  ]);
  for (const ok of [
    'lib/apps/store.js',
    'dist/runtime/cli.js',
    '#lib/apps/store.js',
    'lib/apps/',
    'lib/apps',
    'lib/<area>/store.ts',
    'lib/*/store.ts',
    'lib/apps/x.ts',
    'docs/api',
    'tests/engine/images-registry',
  ])
    assert.ok(exists(ok, tree), ok);
  for (const bad of [
    'lib/apps/sleep.ts',
    'lib/apps/sleep',
    'tests/core/...',
    'lib/gone/',
    'tests/core/<name>.test.ts',
    'tests/engine/images-reg.ts',
  ])
    assert.ok(!exists(bad, tree), bad);
  assert.deepEqual(
    commentsOf('x.ts', "const u = 'lib/not-a-comment.ts'; // lib/a.ts\n/* lib/b.ts */ f();").map(
      (c) => c.text,
    ),
    ['// lib/a.ts', '/* lib/b.ts */'],
  );
});
