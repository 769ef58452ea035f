// The request pipeline as data: the documented stage lists are the code's, and the loop that runs
// them stops at the first answer, waits only for a stage that waits, and stays synchronous otherwise.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Request } from '@whatwg-node/fetch';
import { text } from '#lib/http/respond.js';
import { REQUEST_STAGES } from '../../runtime/dispatcher.js';
import { UPGRADE_STAGES } from '../../runtime/upgrade.js';
import { Exchange, runStages, type Site, type Stage } from '../../runtime/pipeline.js';
import { isPromise } from '#lib/util/maybe.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));

/** The stage lists written in docs/architecture.md "A request's path": lines of `a` → `b` → ... */
function documentedLists(): string[][] {
  const doc = readFileSync(root + 'docs/architecture.md', 'utf8');
  const section = doc.slice(
    doc.indexOf("## A request's path"),
    doc.indexOf('\n## ', doc.indexOf("## A request's path") + 1),
  );
  return section
    .split('\n')
    .filter((line) => /^`[a-z-]+`( → `[a-z-]+`)+$/.test(line.trim()))
    .map((line) =>
      line
        .trim()
        .split(' → ')
        .map((s) => s.slice(1, -1)),
    );
}

test('docs/architecture.md lists the request stages and the upgrade stages the code runs, in order', () => {
  const [request, upgrade, ...more] = documentedLists();
  assert.deepEqual(
    request,
    REQUEST_STAGES.map((s) => s.name),
  );
  assert.deepEqual(
    upgrade,
    UPGRADE_STAGES.map((s) => s.name),
  );
  assert.deepEqual(more, [], 'two lists only');
});

test('the upgrade reuses the request stages themselves, not copies', () => {
  const byName = new Map(REQUEST_STAGES.map((s) => [s.name, s.run]));
  const shared = UPGRADE_STAGES.filter((s) => byName.has(s.name));
  assert.deepEqual(
    shared.map((s) => s.name),
    ['match', 'load', 'select', 'authenticate', 'permission', 'reach', 'authorise'],
  );
  for (const s of shared) assert.equal(s.run, byName.get(s.name), s.name);
});

function exchange(): Exchange {
  return new Exchange({} as Site, new Request('http://x/p'), {}, { get: () => null }, 'GET');
}

const go = (name: string, seen: string[]): Stage => ({ name, run: () => void seen.push(name) });

test('runStages: every stage in order, synchronously, nothing when none answers', () => {
  const seen: string[] = [];
  const out = runStages([go('a', seen), go('b', seen), go('c', seen)], exchange());
  assert.equal(out, undefined);
  assert.deepEqual(seen, ['a', 'b', 'c']);
});

test('runStages: the first answer stops the list', () => {
  const seen: string[] = [];
  const answer = text('stop', 418);
  const out = runStages([go('a', seen), { name: 'b', run: () => answer }, go('c', seen)], exchange());
  assert.equal(out, answer);
  assert.deepEqual(seen, ['a']);
});

test('runStages: a stage that waits makes the rest wait, and its answer stops the list', async () => {
  const seen: string[] = [];
  const later: Stage = { name: 'later', run: () => Promise.resolve().then(() => void seen.push('later')) };
  const out = runStages([go('a', seen), later, go('c', seen)], exchange());
  assert.ok(isPromise(out));
  assert.deepEqual(seen, ['a'], 'nothing after the waiting stage runs before it is done');
  assert.equal(await out, undefined);
  assert.deepEqual(seen, ['a', 'later', 'c']);

  const answer = text('stop', 418);
  const stops: Stage = { name: 'stops', run: () => Promise.resolve(answer) };
  const seen2: string[] = [];
  assert.equal(await runStages([stops, go('c', seen2)], exchange()), answer);
  assert.deepEqual(seen2, []);
});

test("runStages: a throw or a rejection is the caller's", async () => {
  const boom: Stage = {
    name: 'boom',
    run: () => {
      throw new Error('boom');
    },
  };
  assert.throws(() => runStages([boom], exchange()), /boom/);
  const rejects: Stage = { name: 'rejects', run: () => Promise.reject(new Error('later boom')) };
  await assert.rejects(Promise.resolve(runStages([rejects], exchange())), /later boom/);
});
