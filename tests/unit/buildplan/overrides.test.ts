// `source.build` of type `stack`: the operator's choice of stack and its fields win over detection,
// are validated like repository values, and reach the Dockerfile only in exec form.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertContract, finalStage, lines, notDetectable, plan, refused } from './fixtures.js';

const vite = JSON.stringify({
  scripts: { dev: 'vite', build: 'vite build' },
  devDependencies: { vite: '5' },
});

test('install, build, start and port replace what detection chose, each as a JSON-quoted command', async () => {
  const p = await plan(
    { 'package.json': JSON.stringify({ scripts: { start: 'node server.js' } }), 'package-lock.json': '' },
    {
      type: 'stack',
      stack: 'node',
      install: 'npm ci --ignore-scripts',
      build: 'npm run compile && npm run bundle',
      start: 'node dist/main.js --port 9000',
      port: 9000,
    },
  );
  assertContract(p);
  assert.deepEqual(
    [p.install, p.build, p.start, p.port],
    ['npm ci --ignore-scripts', 'npm run compile && npm run bundle', 'node dist/main.js --port 9000', 9000],
  );
  assert.ok(lines(p.dockerfile).includes('RUN ["/bin/sh","-c","npm ci --ignore-scripts"]'));
  assert.ok(lines(p.dockerfile).includes('RUN ["/bin/sh","-c","npm run compile && npm run bundle"]'));
  assert.ok(
    !lines(p.dockerfile).some((l) => /prune/.test(l)),
    'an own install is not pruned behind its back',
  );
  assert.ok(finalStage(p.dockerfile).includes('EXPOSE 9000'));
  assert.ok(finalStage(p.dockerfile).includes('CMD ["node","dist/main.js","--port","9000"]'));
  const shell = await plan(
    { 'requirements.txt': 'x' },
    { type: 'stack', stack: 'python', start: 'gunicorn "app:create()" --bind 0.0.0.0:$PORT' },
  );
  assert.ok(
    lines(shell.dockerfile).includes(
      'CMD ["/bin/sh","-c","gunicorn \\"app:create()\\" --bind 0.0.0.0:$PORT"]',
    ),
  );
});

test('version: reduced like a repository value, but an unsupported one is refused rather than replaced', async () => {
  const p = await plan(
    { 'package.json': JSON.stringify({ main: 'a.js' }), 'a.js': '', '.nvmrc': '18' },
    { type: 'stack', stack: 'node', version: '20' },
  );
  assert.equal(p.runtime.version, '20');
  assert.deepEqual(p.detected_from, ['package.json'], 'the overridden .nvmrc is not a source');
  await refused(
    { 'package.json': '{"main":"a.js"}', 'a.js': '' },
    { file: '(override)', field: 'version', reason: /not a supported node version/ },
    { type: 'stack', stack: 'node', version: '16' },
  );
  await refused(
    { 'requirements.txt': 'x', 'main.py': '' },
    { file: '(override)', field: 'version', reason: /not a supported python version/ },
    { type: 'stack', stack: 'python', version: '2.7' },
  );
  const py = await plan(
    { 'requirements.txt': 'x', 'main.py': '' },
    { type: 'stack', stack: 'python', version: '3.10' },
  );
  assert.equal(py.runtime.image, 'python:3.10-slim-bookworm');
});

test('stack node over a front-end project runs its server; stack static over it serves publish_dir', async () => {
  const asNode = await plan(
    { 'package.json': vite, 'package-lock.json': '' },
    { type: 'stack', stack: 'node', start: 'vite preview --host 0.0.0.0' },
  );
  assert.equal(asNode.stack, 'node');
  const asStatic = await plan(
    { 'package.json': vite, 'package-lock.json': '' },
    { type: 'stack', stack: 'static', publish_dir: 'site/out' },
  );
  assertContract(asStatic);
  assert.ok(lines(asStatic.dockerfile).includes('COPY --from=build /app/site/out /out/srv'));
  await refused(
    { 'package.json': vite },
    { file: 'package.json', field: 'scripts.start', reason: /is missing/ },
    { type: 'stack', stack: 'node' },
  );
});

test('stack static over plain files: publish_dir must be a folder of the repository', async () => {
  const p = await plan(
    { 'docs/index.html': '', 'README.md': '' },
    { type: 'stack', stack: 'static', publish_dir: 'docs' },
  );
  assert.ok(lines(p.dockerfile).includes('COPY docs /out/srv'));
  await refused(
    { 'README.md': '' },
    { file: '(override)', field: 'publish_dir', reason: /not a folder of the repository/ },
    { type: 'stack', stack: 'static', publish_dir: 'site' },
  );
});

test('a start override makes an otherwise unstartable repository plannable; go refuses shell syntax (distroless has no shell)', async () => {
  const r = await plan(
    { Gemfile: "gem 'rake'" },
    { type: 'stack', stack: 'ruby', start: 'bundle exec ruby worker.rb' },
  );
  assert.equal(r.start, 'bundle exec ruby worker.rb');
  const go = await plan(
    { 'go.mod': 'module m\ngo 1.22\n', 'main.go': 'package main' },
    { type: 'stack', stack: 'go', start: '/server --listen :8080' },
  );
  assert.ok(lines(go.dockerfile).includes('CMD ["/server","--listen",":8080"]'));
  await refused(
    { 'go.mod': 'module m\ngo 1.22\n', 'main.go': 'package main' },
    { file: '(override)', field: 'start', reason: /needs a shell/ },
    { type: 'stack', stack: 'go', start: '/server && echo' },
  );
});

test('an override stack whose markers are absent is not detectable; an unknown stack or bad port is refused', async () => {
  const r = await notDetectable({ 'package.json': '{}' }, { type: 'stack', stack: 'php' });
  assert.deepEqual(r.looked_for, ['composer.json']);
  await refused({}, { file: '(override)', field: 'stack' }, { type: 'stack', stack: 'cobol' as never });
  await refused(
    { 'index.html': '' },
    { file: '(override)', field: 'port', reason: /1\.\.65535/ },
    { type: 'stack', stack: 'static', port: 70000 },
  );
});
