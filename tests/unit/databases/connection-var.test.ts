// A database whose provisioning failed takes back the connection URL it put in the app's
// variables, and only that: a value the operator set since under the same name stays.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from '../../_support/request.js';
import { insertApp } from '#lib/apps/store.js';
import { listEnv, setEnvVar } from '#lib/apps/env.js';
import { dropConnectionVar } from '#lib/databases/store.js';

let s: TestApp;
before(async () => (s = await startTestApp()));
after(() => s?.stop());

test('the URL the database set is removed; another value under that name is kept', async () => {
  const { db, sealer } = s.env;
  const app = await insertApp(db, 'conn-var', { type: 'image', image: 'nginx:1.27' });
  const url = 'postgres://u_x:pw@postgres-x:5432/db_x';
  await setEnvVar(db, sealer, app.id, { key: 'DATABASE_URL', value: url, secret: true }, null);
  await setEnvVar(db, sealer, app.id, { key: 'OTHER_URL', value: 'mine', secret: true }, null);
  assert.equal(await dropConnectionVar(db, sealer, app.id, 'OTHER_URL', url), false);
  assert.equal(await dropConnectionVar(db, sealer, app.id, 'DATABASE_URL', url), true);
  assert.equal(await dropConnectionVar(db, sealer, app.id, 'MISSING', url), false);
  assert.deepEqual(
    (await listEnv(db, sealer, app.id)).map((v) => v.key),
    ['OTHER_URL'],
  );
});
