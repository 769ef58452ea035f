// Every operation of the route table that needs no engine or proxy has an in-process test that
// calls it. tests/_support/request.ts records each "METHOD pattern" an in-process request reaches
// into SVC_TEST_HITS; scripts/run-tests.mjs runs the tests under tests/api first, then this file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { routes } from '../../runtime/routes.gen.js';
import { routeModule } from '../../runtime/route-types.js';
import { METHODS } from '#lib/http/handler.js';

/** Operations that cannot answer their purpose without the Docker engine or Caddy, and why. */
const NEEDS_ENGINE: Record<string, string> = {
  'GET /api/ws': 'a WebSocket upgrade: the socket layer (tests/runtime/ws.e2e.test.ts, ws-auth.e2e.test.ts)',
  'GET /api/apps/:id/services/:name/shell': 'a WebSocket exec into a container (tests/engine/shell.test.ts)',
  'POST /api/addons/:id/install':
    'creates the add-on stack and deploys its containers (tests/engine/addons-install.test.ts)',
  'POST /api/apps/:id/databases': 'provisions a database container (tests/engine/data-*.test.ts)',
  'POST /api/apps/:id/backups/:bid/run': 'dumps a database container (tests/engine/data-backups.test.ts)',
  'POST /api/apps/:id/backups/runs/:rid/verify':
    'restores a run into a scratch container (tests/engine/data-backups.test.ts)',
  'GET /api/apps/:id/backups/runs/:rid/download':
    'needs the artifact of a run, which a database container makes (tests/engine/data-artifacts.test.ts)',
  'POST /api/apps/:id/deployments/:did/cancel': 'needs a deployment in flight (tests/engine/deploy.test.ts)',
  'POST /api/apps/:id/deployments/:did/rollback': 'needs a deployment that ran (tests/engine/deploy.test.ts)',
  'POST /api/apps/:id/detect-compose':
    'clones the repository of the app from a git server (tests/engine/git.test.ts)',
  'POST /api/apps/:id/env-example':
    'reads .env.example from the repository of the app on a git server (tests/engine/git.test.ts)',
  'GET /api/apps/:id/services': 'lists the containers of the app (tests/engine/stack.test.ts)',
  'POST /api/apps/:id/restart': 'restarts the containers of the app (tests/engine/apps-api.test.ts)',
  'POST /api/apps/:id/start': 'starts the containers of the app (tests/engine/apps-api.test.ts)',
  'POST /api/apps/:id/stop': 'stops the containers of the app (tests/engine/apps-api.test.ts)',
  'POST /api/apps/:id/services/:name/restart': 'restarts one container (tests/engine/stack.test.ts)',
  'POST /api/apps/:id/services/:name/start': 'starts one container (tests/engine/stack.test.ts)',
  'POST /api/apps/:id/services/:name/stop': 'stops one container (tests/engine/stack.test.ts)',
  'POST /api/apps/:id/ssh-key/test-connection':
    'connects to an SSH git server (tests/engine/ssh-git.test.ts)',
  'POST /api/domains/:id/refresh': 'asks Caddy and DNS about the domain (tests/edge/api.e2e.test.ts)',
  'GET /api/instance/dns-check':
    'resolves the names of the instance in live DNS (tests/edge/api.e2e.test.ts)',
  'POST /api/instance/backup/run':
    'archives the data directory and the volumes of the apps (tests/engine/recovery/instance-backup.test.ts)',
  'POST /api/instance/backup/runs/:rid/verify':
    'needs an instance backup run (tests/engine/recovery/instance-backup.test.ts)',
  'GET /api/instance/backup/runs/:rid':
    'needs an instance backup run (tests/engine/recovery/instance-backup.test.ts)',
};

async function operations(): Promise<string[]> {
  const out: string[] = [];
  for (const route of routes) {
    const mod = await routeModule(route);
    for (const m of METHODS) if (mod[m]) out.push(`${m} ${route.pattern}`);
  }
  return out;
}

function reached(): Set<string> {
  const dir = process.env.SVC_TEST_HITS;
  assert.ok(dir, 'run through scripts/run-tests.mjs (it runs tests/api first and records what they reach)');
  const hits = new Set<string>();
  for (const f of readdirSync(dir))
    for (const line of readFileSync(join(dir, f), 'utf8').split('\n')) if (line) hits.add(line);
  return hits;
}

test('every operation that needs no engine is called by an in-process test', async () => {
  const hits = reached();
  const missing = (await operations()).filter((op) => !hits.has(op) && !(op in NEEDS_ENGINE));
  assert.deepEqual(missing, [], `operations no in-process test calls:\n${missing.join('\n')}`);
});

test('the list names real operations', async () => {
  const ops = new Set(await operations());
  for (const op of Object.keys(NEEDS_ENGINE)) assert.ok(ops.has(op), `${op} is not in the route table`);
});
