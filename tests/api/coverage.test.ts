// Every operation of the route table that needs no engine or proxy has an in-process test that
// calls it. tests/_support/request.ts records each "METHOD pattern" an in-process request reaches
// into SVC_TEST_HITS; scripts/run-tests.mjs runs the tests under tests/api first, then this file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { routes } from '../../runtime/routes.gen.js';
import { routeModule } from '../../runtime/route-types.js';
import { METHODS } from '../../lib/http/handler.js';

/** Operations that cannot answer their purpose without the Docker engine or Caddy, and why. */
const NEEDS_ENGINE: Record<string, string> = {
  'GET /api/ws': 'a WebSocket upgrade: the socket layer (tests/runtime/ws.e2e.test.ts, ws-auth.e2e.test.ts)',
  'GET /api/apps/:id/services/:name/shell': 'a WebSocket exec into a container (tests/engine/shell.test.ts)',
  'POST /api/addons/:id/install': 'creates the add-on stack and deploys its containers (tests/engine/addons-install.test.ts)',
  'POST /api/apps/:id/databases': 'provisions a database container (tests/engine/data-*.test.ts)',
  'POST /api/apps/:id/backups/:bid/run': 'dumps a database container (tests/engine/data-backups.test.ts)',
  'POST /api/apps/:id/backups/runs/:rid/verify': 'restores a run into a scratch container (tests/engine/data-backups.test.ts)',
  'GET /api/apps/:id/backups/runs/:rid/download': 'needs the artifact of a run, which a database container makes (tests/engine/data-artifacts.test.ts)',
  'POST /api/apps/:id/deployments/:did/cancel': 'needs a deployment in flight (tests/engine/deploy.test.ts)',
  'POST /api/apps/:id/deployments/:did/rollback': 'needs a deployment that ran (tests/engine/deploy.test.ts)',
  'POST /api/apps/:id/detect-compose': 'clones the repository of the app from a git server (tests/engine/git.test.ts)',
  'POST /api/apps/:id/env-example': 'reads .env.example from the repository of the app on a git server (tests/engine/git.test.ts)',
  'GET /api/apps/:id/services': 'lists the containers of the app (tests/engine/stack.test.ts)',
  'POST /api/apps/:id/restart': 'restarts the containers of the app (tests/engine/apps-api.test.ts)',
  'POST /api/apps/:id/start': 'starts the containers of the app (tests/engine/apps-api.test.ts)',
  'POST /api/apps/:id/stop': 'stops the containers of the app (tests/engine/apps-api.test.ts)',
  'POST /api/apps/:id/services/:name/restart': 'restarts one container (tests/engine/stack.test.ts)',
  'POST /api/apps/:id/services/:name/start': 'starts one container (tests/engine/stack.test.ts)',
  'POST /api/apps/:id/services/:name/stop': 'stops one container (tests/engine/stack.test.ts)',
  'POST /api/apps/:id/ssh-key/test-connection': 'connects to an SSH git server (tests/engine/ssh-git.test.ts)',
  'POST /api/domains/:id/refresh': 'asks Caddy and DNS about the domain (tests/edge/api.e2e.test.ts)',
  'GET /api/instance/dns-check': 'resolves the names of the instance in live DNS (tests/edge/api.e2e.test.ts)',
  'POST /api/instance/backup/run': 'archives the data directory and the volumes of the apps (tests/engine/recovery/instance-backup.test.ts)',
  'POST /api/instance/backup/runs/:rid/verify': 'needs an instance backup run (tests/engine/recovery/instance-backup.test.ts)',
  'GET /api/instance/backup/runs/:rid': 'needs an instance backup run (tests/engine/recovery/instance-backup.test.ts)',
};

/**
 * Operations that need no engine but no in-process test calls yet. Listed so that a new route
 * cannot slip in untested; each entry is a test to write, and the list only shrinks.
 */
const NOT_YET: Record<string, string> = {
  'DELETE /api/apps/:id/ssh-key': 'tested over a real server only (tests/engine, tests/edge)',
  'DELETE /api/apps/:id/triggers/:tid': 'tested over a real server only (tests/engine, tests/edge)',
  'DELETE /api/apps/:id/webhook': 'tested over a real server only (tests/engine, tests/edge)',
  'GET /api/apps/:id/backups/:bid': 'tested over a real server only (tests/engine, tests/edge)',
  'PATCH /api/apps/:id/backups/:bid': 'tested over a real server only (tests/engine, tests/edge)',
  'GET /api/apps/:id/domains': 'tested over a real server only (tests/engine, tests/edge)',
  'POST /api/apps/:id/domains': 'tested over a real server only (tests/engine, tests/edge)',
  'PATCH /api/domains/:id': 'tested over a real server only (tests/engine, tests/edge)',
  'GET /api/apps/:id/ssh-key': 'tested over a real server only (tests/engine, tests/edge)',
  'POST /api/apps/:id/ssh-key/regenerate': 'tested over a real server only (tests/engine, tests/edge)',
  'GET /api/instance/backup': 'tested over a real server only (tests/engine, tests/edge)',
  'PUT /api/instance/backup': 'tested over a real server only (tests/engine, tests/edge)',
  'GET /api/instance/backup/runs': 'tested over a real server only (tests/engine, tests/edge)',
  'GET /api/instance/base-domain': 'tested over a real server only (tests/engine, tests/edge)',
  'PUT /api/instance/base-domain': 'tested over a real server only (tests/engine, tests/edge)',
  'GET /api/instance/recovery': 'tested over a real server only (tests/engine, tests/edge)',
  'GET /api/security/fail2ban': 'tested over a real server only (tests/engine, tests/edge)',
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
  for (const f of readdirSync(dir)) for (const line of readFileSync(join(dir, f), 'utf8').split('\n')) if (line) hits.add(line);
  return hits;
}

test('every operation that needs no engine is called by an in-process test', async () => {
  const hits = reached();
  const missing = (await operations()).filter((op) => !hits.has(op) && !(op in NEEDS_ENGINE) && !(op in NOT_YET));
  assert.deepEqual(missing, [], `operations no in-process test calls:\n${missing.join('\n')}`);
});

test('the lists name real operations, and none that an in-process test now calls', async () => {
  const ops = new Set(await operations());
  const hits = reached();
  for (const op of [...Object.keys(NEEDS_ENGINE), ...Object.keys(NOT_YET)]) assert.ok(ops.has(op), `${op} is not in the route table`);
  const covered = Object.keys(NOT_YET).filter((op) => hits.has(op));
  assert.deepEqual(covered, [], 'covered now: remove them from NOT_YET');
});
