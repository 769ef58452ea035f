// Short functions: every named function in lib/, runtime/ and handlers/ (function declarations,
// methods, constructors and accessors, and arrow functions or function expressions given a name
// by a variable, property or class field) has a body of at most MAX_LINES lines, measured with
// the TypeScript compiler. The functions already longer are listed in
// function-length-exceptions.json with their length then; that list may only shrink: a listed
// function may not grow, and one that is back under the limit (or gone) must leave the list.
//
// After a merge, or after splitting a function, rewrite the list from the tree:
//   SVC_UPDATE_EXCEPTIONS=1 node scripts/run-tests.mjs repo/function-length
// It lists every function over the limit at its length now and prints what changed (new or grown
// entries are what a reviewer questions: split those instead; see docs/testing.md).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const LIST = 'tests/repo/function-length-exceptions.json';
export const MAX_LINES = 80;
const REGENERATE = 'SVC_UPDATE_EXCEPTIONS=1 node scripts/run-tests.mjs repo/function-length';

export interface Measured {
  file: string;
  name: string;
  lines: number;
}

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(join(root, dir), { withFileTypes: true })) {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) out.push(...sources(rel));
    else if (/\.tsx?$/.test(e.name) && !e.name.endsWith('.d.ts') && !e.name.endsWith('.gen.ts'))
      out.push(rel);
  }
  return out;
}

/** The name a function node is known by, or undefined for an anonymous callback. */
function nameOf(node: ts.Node): string | undefined {
  const text = (n: ts.PropertyName | ts.BindingName | undefined) =>
    n && (ts.isIdentifier(n) || ts.isStringLiteral(n) || ts.isPrivateIdentifier(n)) ? n.text : undefined;
  if (ts.isFunctionDeclaration(node)) return node.name?.text ?? 'default';
  if (ts.isMethodDeclaration(node) || ts.isGetAccessor(node) || ts.isSetAccessor(node))
    return text(node.name);
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  if (ts.isArrowFunction(node) || ts.isFunctionExpression(node)) {
    if (ts.isFunctionExpression(node) && node.name) return node.name.text;
    const p = node.parent;
    if (ts.isVariableDeclaration(p) && p.initializer === node) return text(p.name);
    if (ts.isPropertyAssignment(p) && p.initializer === node) return text(p.name);
    if (ts.isPropertyDeclaration(p) && p.initializer === node) return text(p.name);
    if (ts.isBinaryExpression(p) && p.right === node && p.operatorToken.kind === ts.SyntaxKind.EqualsToken)
      return p.left.getText().replace(/\s+/g, '');
  }
  return undefined;
}

/** A module-level callback is known by the declaration holding it (`export const POST = route(spec, async () => ...)`). */
function holderOf(node: ts.Node): string | undefined {
  for (let p = node.parent; p && !ts.isSourceFile(p); p = p.parent) {
    if (ts.isVariableDeclaration(p) || ts.isPropertyAssignment(p))
      return ts.isIdentifier(p.name) || ts.isStringLiteral(p.name) ? p.name.text : undefined;
    if (ts.isExportAssignment(p)) return 'default';
  }
  return undefined;
}

/**
 * Every named function of one file, qualified by the named functions and classes around it, and
 * every callback at module level (a route's handler) under the name of the declaration holding it.
 */
export function measure(file: string, text: string): Measured[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TSX);
  const out: Measured[] = [];
  const seen = new Map<string, number>();
  const line = (pos: number) => sf.getLineAndCharacterOfPosition(pos).line;
  const visit = (node: ts.Node, scope: string[], inFunction: boolean) => {
    let inner = scope;
    let within = inFunction;
    if (ts.isClassLike(node)) inner = [...scope, node.name?.text ?? 'class'];
    else if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      within = true;
      const name = nameOf(node) ?? (inFunction ? undefined : holderOf(node));
      if (name !== undefined) {
        const body = node.body as ts.Node;
        let qualified = [...scope, name].join('.');
        const n = (seen.get(qualified) ?? 0) + 1;
        seen.set(qualified, n);
        if (n > 1) qualified += `#${n}`;
        out.push({ file, name: qualified, lines: line(body.getEnd()) - line(body.getStart(sf)) + 1 });
        inner = [...scope, name];
      }
    }
    ts.forEachChild(node, (c) => visit(c, inner, within));
  };
  visit(sf, [], false);
  return out;
}

/** What the tree breaks against the list: each line says what to do. */
export function check(found: Measured[], listed: Measured[], max = MAX_LINES): string[] {
  const key = (m: Measured) => `${m.file} ${m.name}`;
  const now = new Map(found.map((m) => [key(m), m]));
  const allowed = new Map(listed.map((m) => [key(m), m]));
  const problems: string[] = [];
  for (const m of found) {
    if (m.lines <= max) continue;
    const was = allowed.get(key(m));
    if (!was)
      problems.push(
        `${m.file}: ${m.name} is ${m.lines} lines (limit ${max}): split it along its seams; do not list it`,
      );
    else if (m.lines > was.lines)
      problems.push(
        `${m.file}: ${m.name} grew from ${was.lines} to ${m.lines} lines: shorten it to ${was.lines} or fewer (or split it under ${max + 1})`,
      );
  }
  for (const was of listed) {
    const m = now.get(key(was));
    if (!m)
      problems.push(
        `${was.file}: ${was.name} is listed but gone (renamed or moved?): remove it from ${LIST}, or run ${REGENERATE}`,
      );
    else if (m.lines <= max)
      problems.push(
        `${was.file}: ${was.name} is now ${m.lines} lines, within the limit: remove it from ${LIST}, or run ${REGENERATE}`,
      );
    else if (m.lines < was.lines)
      problems.push(
        `${was.file}: ${was.name} shrank from ${was.lines} to ${m.lines} lines: lower its entry in ${LIST}, or run ${REGENERATE}`,
      );
  }
  return problems;
}

/** The list rewritten from the tree: every function over the limit at its length now. */
export function regenerate(found: Measured[], max = MAX_LINES): Measured[] {
  return found
    .filter((m) => m.lines > max)
    .sort((a, b) => a.file.localeCompare(b.file) || a.name.localeCompare(b.name));
}

/** The list as Prettier prints it: one entry a line. */
export function serialise(list: Measured[]): string {
  const rows = list.map(
    (m) => `  { "file": ${JSON.stringify(m.file)}, "name": ${JSON.stringify(m.name)}, "lines": ${m.lines} }`,
  );
  return `[\n${rows.join(',\n')}\n]\n`;
}

test('no function grows past the limit, and the list of longer ones only shrinks', () => {
  const files = ['lib', 'runtime', 'handlers'].flatMap(sources);
  assert.ok(files.length > 300, `read ${files.length} files`);
  const found = files.flatMap((f) => measure(f, readFileSync(join(root, f), 'utf8')));
  const listed = JSON.parse(readFileSync(join(root, LIST), 'utf8')) as Measured[];
  const over = found.filter((m) => m.lines > MAX_LINES);
  const worst = [...over].sort((a, b) => b.lines - a.lines).slice(0, 6);
  console.log(
    `functions: ${found.length}; over ${MAX_LINES} lines: ${over.length}; over 150: ${
      over.filter((m) => m.lines > 150).length
    }; longest: ${worst.map((m) => `${m.name} ${m.lines}`).join(', ')}`,
  );
  if (process.env.SVC_UPDATE_EXCEPTIONS === '1') {
    // The rewrite accepts what the tree holds; what it added or let grow is printed for the
    // commit message (and for a reviewer: a new long function should be split instead).
    const next = regenerate(found);
    writeFileSync(join(root, LIST), serialise(next));
    console.log(`rewrote ${LIST}: ${listed.length} -> ${next.length} entries`);
    for (const p of check(found, listed)) console.log(`  ${p}`);
    return;
  }
  const problems = check(found, listed);
  assert.ok(
    problems.length === 0,
    `function lengths (${problems.length}):\n${problems.join('\n')}\n` +
      `A function over ${MAX_LINES} lines that is not in ${LIST} is split, never added.`,
  );
});

test('the measure names each kind of function and counts the lines of its body', () => {
  const src = [
    'export function a() {', //       1
    '  const inner = () => {', //     2
    '    return 1;', //               3
    '  };', //                        4
    '  return inner();', //           5
    '}', //                           6
    'class K {', //                   7
    '  constructor() {}', //          8
    '  run(): void {', //             9
    '    [1].map((x) => x);', //      10
    '  }', //                         11
    '  field = function () {', //     12
    '  };', //                        13
    '}', //                           14
    'const o = { m() {}, p: () => 2 };', // 15
    'export const POST = route({}, async () => {', // 16
    '  return 1;', //                 17
    '});', //                         18
  ].join('\n');
  assert.deepEqual(
    measure('lib/x.ts', src).map((m) => `${m.name}:${m.lines}`),
    ['a:6', 'a.inner:3', 'K.constructor:1', 'K.run:3', 'K.field:2', 'm:1', 'p:1', 'POST:3'],
  );
});

test('the check fails a new long function, a grown one, and a listed one that is short or gone', () => {
  const f = (name: string, lines: number) => ({ file: 'lib/x.ts', name, lines });
  const found = [f('fresh', 90), f('grown', 100), f('short', 40), f('same', 95), f('less', 85)];
  const listed = [f('grown', 99), f('short', 81), f('gone', 120), f('same', 95), f('less', 88)];
  const problems = check(found, listed);
  assert.equal(problems.length, 5, problems.join('\n'));
  assert.match(problems[0]!, /fresh is 90 lines .*split it/);
  assert.match(problems[1]!, /grown grew from 99 to 100/);
  assert.match(problems[2]!, /short is now 40 lines.*remove it from/);
  assert.match(problems[3]!, /gone is listed but gone.*remove it/);
  assert.match(problems[4]!, /less shrank from 88 to 85.*lower its entry/);
  const next = regenerate(found);
  assert.deepEqual(next, [f('fresh', 90), f('grown', 100), f('less', 85), f('same', 95)]);
  assert.deepEqual(check(found, next), []);
  assert.deepEqual(JSON.parse(serialise(next)), next);
});
