// Ranges as repositories write them reduce to a known release line; a reduction says so.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { reduceVersion } from '#lib/buildplan/versions.js';
import { NODE_DEFAULT, NODE_VERSIONS } from '#lib/buildplan/node.js';
import { PYTHON_DEFAULT, PYTHON_VERSIONS } from '#lib/buildplan/python.js';
import { plan } from './fixtures.js';

const node = (input: string) =>
  reduceVersion(input, NODE_VERSIONS, NODE_DEFAULT, { name: 'node', source: 'x', tilde: 'npm' });
const py = (input: string) =>
  reduceVersion(input, PYTHON_VERSIONS, PYTHON_DEFAULT, {
    name: 'python',
    source: 'x',
    tilde: 'pessimistic',
  });

test('node ranges: an exact known line passes, anything else is reduced with a warning', () => {
  const cases: [string, string, boolean][] = [
    ['22', '22', false],
    ['v20', '20', false],
    ['>=18', '22', true],
    ['>= 18.17.0', '22', true],
    ['^20.1', '20', true],
    ['~20.11.0', '20', true],
    ['20.x', '20', true],
    ['20.11.1', '20', true],
    ['<20', '18', true],
    ['>=18 <21', '20', true],
    ['^18 || ^20', '20', true],
    ['18 - 20', '20', true],
    ['>24', '22', true],
    ['*', '22', true],
  ];
  for (const [input, version, warned] of cases) {
    const r = node(input);
    assert.equal(r.version, version, input);
    assert.equal(r.warning !== null, warned, `${input}: ${r.warning}`);
  }
  assert.match(node('>=18').warning!, /node version ">=18" \(x\) reduced to the node 22 image/);
});

test('unknown or unsatisfiable input falls back to the default with a warning', () => {
  assert.deepEqual(node('banana'), {
    version: '22',
    warning: 'node version "banana" (x) is not understood; using node 22',
    fallback: true,
  });
  const r = node('^16');
  assert.equal(r.version, '22');
  assert.equal(r.fallback, true);
  assert.match(r.warning!, /no supported line \(18, 20, 22, 24\) satisfies it/);
});

test('python specifiers and pessimistic tilde', () => {
  assert.equal(py('3.11').version, '3.11');
  assert.equal(py('3.11').warning, null);
  assert.equal(py('>=3.9,<3.12').version, '3.11');
  assert.equal(py('^3.10').version, '3.12');
  assert.equal(py('==3.10.*').version, '3.10');
  assert.equal(py('~=3.10.2').version, '3.10');
  assert.equal(py('~=3.10').version, '3.12');
  assert.equal(py('>=3.8, <4.0').version, '3.12');
});

test('node aliases: lts/*, an LTS codename, latest', async () => {
  const pkg = JSON.stringify({ scripts: { start: 'node s.js' } });
  const cases: [string, string][] = [
    ['lts/*', '22'],
    ['lts/iron', '20'],
    ['lts/hydrogen', '18'],
    ['node', '24'],
    ['lts/argon', '22'],
  ];
  for (const [nvmrc, version] of cases) {
    const p = await plan({ 'package.json': pkg, '.nvmrc': `${nvmrc}\n` });
    assert.equal(p.runtime.version, version, nvmrc);
    assert.equal(p.runtime.image, `node:${version}-bookworm-slim`);
    assert.equal(p.warnings.length, 2, `${nvmrc}: ${p.warnings}`);
  }
});
