// An app as a file, in-process through the typed client: export (json and yaml, secrets as
// placeholders, defaults left out), apply (a round trip changes nothing, a dry run changes
// nothing, prune only when asked, one audit entry) and the file's JSON Schema.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from 'yaml';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { startTestApp, typedClient, type TestApp } from '../../_support/request.js';
import type { SvcClient, components } from '../../../client/index.js';
import { revealEnv } from '#lib/apps/env.js';

type AppFile = components['schemas']['AppFile'];

let s: TestApp;
let api: SvcClient;
let appId = '';

before(async () => {
  s = await startTestApp();
  api = await typedClient(s);
  const made = await api.POST('/api/apps', {
    body: { name: 'cfg-web', source: { type: 'image', image: 'nginx:1.27' } },
  });
  assert.equal(made.response.status, 201);
  appId = made.data!.app.id;
  const env = await api.PUT('/api/apps/{id}/env', {
    params: { path: { id: appId } },
    body: {
      items: [
        { key: 'PUBLIC', value: 'shown', secret: false },
        { key: 'TOKEN', value: 'hidden-value-123', secret: true },
      ],
    },
  });
  assert.equal(env.response.status, 200);
  const svc = await api.PATCH('/api/apps/{id}/services/{name}', {
    params: { path: { id: appId, name: 'app' } },
    body: { port: 8080 },
  });
  assert.equal(svc.response.status, 200);
});
after(async () => {
  await s?.stop();
});

const exportJson = async (id = appId) => {
  const r = await api.GET('/api/apps/{id}/export', { params: { path: { id }, query: { format: 'json' } } });
  assert.equal(r.response.status, 200);
  return r.data!;
};
const apply = (body: AppFile & { prune?: boolean }, dryRun = false) =>
  api.POST('/api/apps/apply', { params: { query: dryRun ? { dry_run: '1' } : {} }, body: body as never });
const appliedEntries = async () =>
  (
    await s.env.db
      .selectFrom('audit')
      .select(['action', 'detail'])
      .where('route', '=', 'POST /api/apps/apply')
      .execute()
  ).length;

test('export writes the file: name and source, secrets as placeholders, defaults left out', async () => {
  const file = await exportJson();
  assert.deepEqual(file, {
    name: 'cfg-web',
    source: { type: 'image', image: 'nginx:1.27' },
    services: { app: { port: 8080 } },
    env: { PUBLIC: 'shown', TOKEN: '${TOKEN}' },
  });
  const yaml = await api.GET('/api/apps/{id}/export', {
    params: { path: { id: appId }, query: { format: 'yaml' } },
    parseAs: 'text',
  });
  assert.equal(yaml.response.status, 200);
  assert.match(yaml.response.headers.get('content-type')!, /^application\/yaml/);
  const text = yaml.data as unknown as string;
  assert.equal(text.includes('hidden-value-123'), false, 'no secret value in the file');
  assert.deepEqual(parse(text), file, 'the YAML says the same as the JSON');
  const bad = await api.GET('/api/apps/{id}/export', {
    params: { path: { id: appId }, query: { format: 'toml' as 'yaml' } },
  });
  assert.equal(bad.response.status, 400);
});

test('an exported file applied back changes nothing, in a dry run and for real', async () => {
  const file = await exportJson();
  const before = await appliedEntries();
  const dry = await apply(file, true);
  assert.equal(dry.response.status, 200, JSON.stringify(dry.error));
  assert.deepEqual(dry.data!.changes, []);
  assert.equal(dry.data!.dry_run, true);
  const real = await apply(file);
  assert.equal(real.response.status, 200, JSON.stringify(real.error));
  assert.deepEqual([real.data!.changes, real.data!.created, real.data!.missing_secrets], [[], false, []]);
  assert.equal(await appliedEntries(), before + 1, 'the real apply is one entry; the dry run none');
  assert.deepEqual(await exportJson(), file);
});

test('a dry run answers every change as {path, before, after} and changes nothing', async () => {
  const file = await exportJson();
  const before = await appliedEntries();
  const next = {
    ...file,
    services: { app: { port: 9090, health_path: '/healthz' } },
    sleep_after_minutes: 30,
    env: { ...file.env, PUBLIC: 'changed', NEW_ONE: 'x' },
  };
  const dry = await apply(next, true);
  assert.equal(dry.response.status, 200, JSON.stringify(dry.error));
  assert.deepEqual(dry.data!.changes, [
    { path: 'env.NEW_ONE', before: null, after: 'x' },
    { path: 'env.PUBLIC', before: 'shown', after: 'changed' },
    { path: 'services.app.health_path', before: null, after: '/healthz' },
    { path: 'services.app.port', before: 8080, after: 9090 },
    { path: 'sleep_after_minutes', before: null, after: 30 },
  ]);
  assert.deepEqual(await exportJson(), file, 'nothing changed');
  assert.equal(await appliedEntries(), before, 'a dry run is not audited');
  const real = await apply(next);
  assert.equal(real.response.status, 200);
  assert.deepEqual(real.data!.changes, dry.data!.changes, 'the same changes, made');
  const now = await exportJson();
  assert.deepEqual(now.services, { app: { port: 9090, health_path: '/healthz' } });
  assert.equal(now.sleep_after_minutes, 30);
  assert.deepEqual(now.env, { PUBLIC: 'changed', TOKEN: '${TOKEN}', NEW_ONE: 'x' });
  const entry = await s.env.db
    .selectFrom('audit')
    .select(['action', 'detail', 'app_id'])
    .where('route', '=', 'POST /api/apps/apply')
    .orderBy('id', 'desc')
    .executeTakeFirstOrThrow();
  assert.equal(entry.action, 'app.applied');
  assert.equal(entry.app_id, appId);
  assert.deepEqual(
    JSON.parse(entry.detail!).changes,
    real.data!.changes.map((c) => c.path),
  );
});

test('what the file does not name stays, unless it says prune: true', async () => {
  const file = await exportJson();
  const { env: _env, sleep_after_minutes: _sleep, ...bare } = file;
  const kept = await apply(bare);
  assert.equal(kept.response.status, 200);
  assert.deepEqual(kept.data!.changes, [], 'nothing deleted by surprise');
  assert.deepEqual((await exportJson()).env, file.env);
  const dry = await apply({ ...bare, env: { TOKEN: '${TOKEN}' }, prune: true }, true);
  assert.deepEqual(
    dry.data!.changes.map((c) => [c.path, c.after]),
    [
      ['env.NEW_ONE', null],
      ['env.PUBLIC', null],
      ['sleep_after_minutes', null],
    ],
  );
  const pruned = await apply({ ...bare, env: { TOKEN: '${TOKEN}' }, prune: true });
  assert.equal(pruned.response.status, 200);
  const now = await exportJson();
  assert.deepEqual(now.env, { TOKEN: '${TOKEN}' }, 'the secret kept its value');
  assert.equal(now.sleep_after_minutes, undefined);
  assert.equal(await revealEnv(s.env.db, s.env.sealer, appId, 'TOKEN'), 'hidden-value-123');
});

test('apply creates the app a file names, and answers the secrets it still lacks', async () => {
  const file = await exportJson();
  const copy = { ...file, name: 'cfg-copy', env: { MODE: 'prod', API_KEY: { secret: true as const } } };
  const dry = await apply(copy, true);
  assert.equal(dry.response.status, 200);
  assert.equal(dry.data!.app, null);
  assert.ok(dry.data!.changes.some((c) => c.path === 'source.image' && c.before === null));
  assert.equal(
    (await api.GET('/api/apps')).data!.items.some((a) => a.name === 'cfg-copy'),
    false,
  );
  const made = await apply({ ...copy, triggers: [{ event: 'tag', pattern: 'v*' }] });
  assert.equal(made.response.status, 200, JSON.stringify(made.error));
  assert.equal(made.data!.created, true);
  assert.deepEqual(made.data!.missing_secrets, ['API_KEY']);
  const exported = await exportJson(made.data!.app!.id);
  assert.deepEqual(exported.env, { MODE: 'prod' });
  assert.deepEqual(exported.services, file.services);
  assert.deepEqual(exported.triggers, [{ event: 'tag', pattern: 'v*' }]);
  const release = await apply({ ...exported, release_command: 'sh -c "echo migrated"' });
  assert.deepEqual(release.data!.changes, [
    { path: 'release_command', before: null, after: ['sh', '-c', 'echo migrated'] },
  ]);
  const withRelease = await exportJson(made.data!.app!.id);
  assert.deepEqual(withRelease.release_command, ['sh', '-c', 'echo migrated']);
  assert.deepEqual((await apply(withRelease, true)).data!.changes, [], 'round trip');
  const kept = await apply({ ...exported, triggers: undefined });
  assert.deepEqual(kept.data!.changes, [], 'triggers the file leaves out stay');
  const swapped = await apply({
    ...exported,
    triggers: [{ event: 'push', pattern: 'main', enabled: false }],
  });
  assert.deepEqual(
    swapped.data!.changes.map((c) => c.path),
    ['triggers'],
  );
  assert.deepEqual((await exportJson(made.data!.app!.id)).triggers, [
    { event: 'push', pattern: 'main', enabled: false },
  ]);
});

test('a bad file is a 400 naming the field, and creates nothing', async () => {
  const count = (await api.GET('/api/apps')).data!.items.length;
  for (const [body, field] of [
    [
      { name: 'cfg-bad', source: { type: 'image', image: 'nginx:1' }, services: { app: { port: 0 } } },
      'services.app.port',
    ],
    [{ name: 'cfg-bad', source: { type: 'image', image: 'nginx:1' }, env: { '1X': 'a' } }, 'env.1X'],
    [{ name: 'cfg-bad', source: { type: 'image', image: 'nginx:1' }, extra: true }, ''],
    [
      { name: 'cfg-bad', source: { type: 'image', image: 'nginx:1' }, services: { app: { command: 'x' } } },
      'services.app.command',
    ],
    [{ name: 'cfg-bad', source: { type: 'image', image: 'nginx:1' }, build: { type: 'auto' } }, 'build'],
    [
      {
        name: 'cfg-bad',
        source: { type: 'image', image: 'nginx:1' },
        jobs: [{ name: 'n', schedule: '@daily', command: ['x'] }],
      },
      'jobs',
    ],
  ] as const) {
    const r = await apply(body as never);
    assert.equal(r.response.status, 400, JSON.stringify(body));
    const err = r.error as { code: string; details?: Array<{ field: string }> };
    assert.equal(err.code, 'bad_request');
    if (field)
      assert.ok(
        err.details?.some((d) => d.field.startsWith(field)),
        JSON.stringify(err),
      );
  }
  assert.equal((await api.GET('/api/apps')).data!.items.length, count);
});

test('the JSON Schema of svc.yaml is served, public, and agrees with the deploy-time check', async () => {
  const r = await s.request('/api/schemas/svc.json');
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type')!, /json/);
  const schema = (await r.json()) as Record<string, unknown>;
  const { $id: _id, ...rest } = schema;
  const validate = new Ajv2020({ strict: false }).compile(rest);
  const good = {
    build: { type: 'dockerfile', path: 'Dockerfile' },
    services: { web: { port: 8080, health_path: '/healthz', replicas: 2, command: 'node server.js' } },
    sleep_after_minutes: 60,
    env: { LOG_LEVEL: 'info', DATABASE_URL: { secret: true, description: 'the database' } },
  };
  assert.equal(validate(good), true, JSON.stringify(validate.errors));
  assert.equal(validate({ ...good, servces: {} }), false, 'an unknown key');
  assert.equal(validate({ services: { web: { port: 70000 } } }), false, 'a port out of range');
  assert.equal(validate({ env: { X: { secret: false } } }), false, 'a secret is {secret: true}');
});
