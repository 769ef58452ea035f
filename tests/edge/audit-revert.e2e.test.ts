// A revert of an instance setting and of a domain goes through the proxy sync like the original
// request: a real Caddy (tests/_support/edge.ts) serves what the restored rows say.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { needEdge, startEdgeLab, type EdgeLab } from '../_support/edge.js';
import { startTestServer, adminClient, type TestServer, type Client } from '../_support/server.js';
import { poll } from '../_support/wait.js';

let lab: EdgeLab | null = null;
let server: TestServer | null = null;
let c: Client;

after(async () => {
  await server?.stop();
  await lab?.stop();
});

const tag = randomBytes(3).toString('hex');
const BASE = `aud${tag}.test`;

/** Waits until Caddy's loaded config does (or does not) name `host`. */
async function caddyServes(host: string, present: boolean): Promise<void> {
  await poll(
    `Caddy config ${present ? 'names' : 'no longer names'} ${host}`,
    async () => JSON.stringify(await lab!.admin('/config/')).includes(host) === present || null,
    60_000,
    200,
  );
}

async function lastEntry(action: string) {
  const r = await c.req('GET', `/api/audit?action=${action}&limit=1`);
  assert.equal(r.status, 200, r.text);
  return r.body.items[0];
}

test('reverting the base domain and a domain re-syncs Caddy with the restored state', async (t) => {
  if (!(await needEdge(t))) return;
  lab = await startEdgeLab();
  server = await startTestServer({ ...lab.vars }, { edge: { checkIntervalMs: 1000, checkerTickMs: 250 } });
  c = await adminClient(server);
  const control = `svc.${BASE}`;

  const put = await c.req('PUT', '/api/instance/base-domain', { base_domain: BASE });
  assert.equal(put.status, 200, put.text);
  assert.equal(put.body.control_domain, control);
  await caddyServes(control, true);
  const entry = await lastEntry('instance.base_domain');
  const diff = await c.req('GET', `/api/audit/${entry.id}/diff`);
  assert.deepEqual(diff.body.rows, [
    { field: 'base_domain', status: 'changed', before: null, after: BASE, masked: false },
  ]);

  const host = `r${tag}.example.com`;
  const created = await c.req('POST', '/api/domains', { hostname: host, redirect_to: 'example.org' });
  assert.equal(created.status, 201, created.text);
  await caddyServes(host, true);
  const creation = await lastEntry('domain.created');

  const rev = await c.req('POST', `/api/audit/${entry.id}/revert`);
  assert.equal(rev.status, 200, rev.text);
  assert.equal((await c.req('GET', '/api/instance/base-domain')).body.base_domain, null);
  await caddyServes(control, false);

  const rev2 = await c.req('POST', `/api/audit/${creation.id}/revert`);
  assert.equal(rev2.status, 200, rev2.text);
  assert.equal((await c.req('GET', `/api/domains/${created.body.domain.id}`)).status, 404);
  await caddyServes(host, false);

  // Redo: reverting the revert applies the base domain again, through the same path.
  const redo = await c.req('POST', `/api/audit/${rev.body.audit_id}/revert`);
  assert.equal(redo.status, 200, redo.text);
  await caddyServes(control, true);
});
