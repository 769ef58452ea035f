// Handlers are plain functions: call them with a Request and an injected env, no server.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Request } from '@whatwg-node/fetch';
import * as health from '../../handlers/api/health.js';
import * as me from '../../handlers/api/auth/me.js';
import * as setupStatus from '../../handlers/api/setup/status.js';
import type { Ctx } from '#lib/http/handler.js';
import type { Services } from '#lib/http/handler.js';
import { memoryEnv } from '../_support/env.js';

let env: Services;
before(async () => {
  env = await memoryEnv();
});
after(async () => {
  await env.db.destroy();
});

function ctx(extra: Partial<Ctx> = {}): Ctx {
  return {
    params: {},
    query: {},
    body: undefined,
    env,
    principal: null,
    client: { ip: '127.0.0.1', secure: false, userAgent: null },
    requestId: 't',
    waitUntil: () => {},
    audit: () => {},
    requireStepUp: () => {},
    permit: () => {},
    routeSpec: async () => null,
    ...extra,
  };
}

test('health answers ok after a database round trip', async () => {
  const res = await health.GET!(new Request('http://x/api/health'), ctx());
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { status: 'ok', db: 'ok' });
  assert.equal(health.GET.spec.auth, 'public');
});

test('setup status is open while no operator exists', async () => {
  const res = await setupStatus.GET!(new Request('http://x/api/setup/status'), ctx());
  assert.deepEqual(await res.json(), { open: true, oidc: false });
});

test('me echoes the principal and how it authenticated', async () => {
  const user = { id: 'u1', username: 'ops', totp_enabled: false, role: 'viewer', app_ids: null, sso: false };
  const principal = {
    kind: 'token' as const,
    user,
    credentialId: 't1',
    stepUpUntil: null,
    permissions: new Set(['self.read', 'app.read'] as const),
    appIds: null,
  };
  const res = await me.GET!(new Request('http://x/api/auth/me'), ctx({ principal }));
  assert.deepEqual(await res.json(), {
    user: principal.user,
    via: 'token',
    permissions: ['app.read', 'self.read'],
  });
});
