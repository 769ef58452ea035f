// What an idle server holds (docs/performance.md): the real `svc serve`, as an operator starts it.
// Its loaded modules are read through a module hook given in NODE_OPTIONS, which writes each URL
// the process loads to a file.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serve, type Served } from '../_support/cli.js';
import { SERVE_NODE_OPTIONS, unitText } from '#lib/install/texts.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const dirs: string[] = [];
let svc: Served | null = null;
after(async () => {
  await svc?.stop();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

const hooks = `import { appendFileSync } from 'node:fs';
export async function load(url, context, next) {
  appendFileSync(process.env.SVC_TEST_MODULE_LOG, url + '\\n');
  return next(url, context);
}`;
// CommonJS packages (kysely, pg) are required, which the hook does not see: Module._load does.
const preload = `import Module, { register } from 'node:module';
import { appendFileSync } from 'node:fs';
register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hooks)}));
const load = Module._load;
Module._load = function (request, ...rest) {
  appendFileSync(process.env.SVC_TEST_MODULE_LOG, 'require:' + request + '\\n');
  return load.call(this, request, ...rest);
};`;

test('an idle server answering health checks has not loaded zod, the body adapter or the PostgreSQL driver; what needs them loads them', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-idle-'));
  dirs.push(dir);
  const log = join(dir, 'modules.log');
  const s = (svc = await serve({
    SVC_DATA_DIR: join(dir, 'data'),
    SVC_PROXY: 'off',
    SVC_TEST_MODULE_LOG: log,
    NODE_OPTIONS: `--import=data:text/javascript,${encodeURIComponent(preload)}`,
  }));
  for (let i = 0; i < 3; i++) {
    const r = await fetch(s.url + '/api/health');
    assert.equal(r.status, 200);
    assert.deepEqual(await r.json(), { status: 'ok', db: 'ok' });
  }
  const idle = (await readFile(log, 'utf8')).split('\n');
  assert.ok(
    idle.some((u) => u.includes('/handlers/api/health.js')),
    'the hook sees the modules the server loads',
  );
  assert.ok(idle.includes('require:kysely'), 'the hook sees what is required');
  // Nor the adapter for request bodies, nor the PostgreSQL driver of an instance on SQLite.
  assert.deepEqual(
    idle.filter(
      (u) => u.includes('/node_modules/zod/') || u.includes('/@whatwg-node/server/') || u === 'require:pg',
    ),
    [],
  );
  const me = await fetch(s.url + '/api/auth/me');
  assert.equal(me.status, 401);
  const later = (await readFile(log, 'utf8')).split('\n');
  assert.ok(later.some((u) => u.includes('/node_modules/zod/')));
  const login = await fetch(s.url + '/api/auth/login', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'nobody', password: 'not a password at all' }),
  });
  assert.equal(login.status, 401, 'a request with a body is answered by the adapter it loads');
  const last = (await readFile(log, 'utf8')).split('\n');
  assert.ok(last.some((u) => u.includes('/@whatwg-node/server/')));
  assert.ok(!last.includes('require:pg'));
});

test('the serving process gets the same Node.js options from the unit, the image and npm start', async () => {
  assert.ok(SERVE_NODE_OPTIONS.length > 0);
  const flags = SERVE_NODE_OPTIONS.join(' ');
  const unit = unitText({ node: '/usr/bin/node', cli: '/opt/svc/dist/runtime/cli.js' });
  assert.match(
    unit,
    new RegExp(`^ExecStart=/usr/bin/node ${flags} /opt/svc/dist/runtime/cli\\.js serve$`, 'm'),
  );
  const dockerfile = await readFile(join(root, 'Dockerfile'), 'utf8');
  const entry = /^ENTRYPOINT (\[.*\])$/m.exec(dockerfile);
  assert.ok(entry, 'the Dockerfile has an exec-form ENTRYPOINT');
  assert.deepEqual(JSON.parse(entry[1]!), [
    '/usr/local/bin/node',
    ...SERVE_NODE_OPTIONS,
    '/opt/svc/dist/runtime/cli.js',
  ]);
  const pkg = JSON.parse(await readFile(join(root, 'package.json'), 'utf8'));
  assert.match(pkg.scripts.start, new RegExp(`&& node ${flags} dist/runtime/cli\\.js serve$`));
});
