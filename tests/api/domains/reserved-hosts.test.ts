// Automatic and preview hosts are reserved for their app (docs/operating.md, "Reserved hosts"): an
// admin token limited to app A, or the owner by mistake, cannot make B's `<b>.<base>`,
// `<x>.<b>.<base>` or `pr-<n>-<b>.<base>` (any case, trailing dot) a domain of A or a redirect, on
// any path that adds or moves a domain: POST /api/domains, POST /api/apps/{id}/domains, PATCH,
// an audit revert. An app created later (POST /api/apps, import) or a base domain set later that
// would take an existing custom domain is refused too, and the proxy plan never lets a custom
// domain shadow an automatic host.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { SvcClient } from '../../../client/index.js';
import { startTestApp, typedClient, type TestApp } from '../../_support/request.js';
import { adminClient, ADMIN, type Client } from '../../_support/server.js';
import { people, insertDomainRow, twoApps, type People } from '../../_support/people.js';
import { planRoutes, type EdgeRows } from '#lib/proxy/config.js';

const BASE = 'apps.example.test';
let s: TestApp;
let owner: Client;
let ownerApi: SvcClient;
let limitedA: SvcClient;
let team: People;
let appA: string;
let appB: string;

before(async () => {
  s = await startTestApp({ SVC_BASE_DOMAIN: BASE });
  owner = await adminClient(s);
  assert.equal((await owner.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
  team = people(s);
  [appA] = await twoApps(owner, ['ra', 'rz'], 'nginx:1.27');
  // B serves `api` on 8080 (its first service: rb.<base>) and `web` on 80 (web.rb.<base>).
  const b = await owner.req('POST', '/api/apps/import', {
    name: 'rb',
    source: { type: 'image', image: 'nginx:1.27' },
    services: { web: { port: 80 }, api: { port: 8080 } },
  });
  assert.equal(b.status, 201, b.text);
  appB = b.body.app.id;
  const me = (await owner.req('GET', '/api/auth/me')).body.user.id as string;
  ownerApi = await typedClient(s, (await team.tokenOf(me, undefined, { stepUp: true })).bearer!);
  const admin = await team.operator('admin-of-a', 'admin', null, { stepUp: true });
  const t = await team.tokenOf(admin.id, { scopes: null, appIds: [appA] }, { stepUp: true });
  limitedA = await typedClient(s, t.bearer!);
});
after(() => s?.stop());

const B_HOSTS = [
  `rb.${BASE}`,
  `web.rb.${BASE}`,
  `api.rb.${BASE}`,
  `pr-1-rb.${BASE}`,
  `WWW.PR-77-RB.${BASE.toUpperCase()}.`,
  `Rb.${BASE}.`,
  `deep.name.rb.${BASE}`,
];

function isReserved(r: { response: Response; error?: unknown }, host: string, app = 'rb'): void {
  assert.equal(r.response.status, 409, `${host}: ${JSON.stringify(r.error)}`);
  const e = r.error as { code: string; error: string; details?: Array<{ rule?: string }> };
  assert.equal(e.code, 'conflict');
  assert.match(e.error, new RegExp(`reserved for app "${app}"`), host);
  assert.match(e.error, /automatic and preview hosts/);
}

test("a token limited to A cannot take B's automatic or preview hosts, on either POST, in any case", async () => {
  for (const hostname of B_HOSTS) {
    isReserved(
      await limitedA.POST('/api/domains', { body: { hostname, app_id: appA, service: 'web', port: 80 } }),
      hostname,
    );
    isReserved(
      await limitedA.POST('/api/apps/{id}/domains', {
        params: { path: { id: appA } },
        body: { hostname, service: 'web', port: 80 },
      }),
      hostname,
    );
  }
  const listed = await ownerApi.GET('/api/domains');
  assert.ok(!listed.data!.items.some((d) => 'id' in d && d.app_id === appA), 'nothing was saved');
});

test('the owner is refused the same, for an app and for a redirect; B may name a host of its own namespace it does not serve', async () => {
  for (const hostname of B_HOSTS) {
    isReserved(
      await ownerApi.POST('/api/domains', { body: { hostname, app_id: appA, service: 'web', port: 80 } }),
      hostname,
    );
    isReserved(
      await ownerApi.POST('/api/domains', { body: { hostname, redirect_to: 'example.org' } }),
      hostname,
    );
  }
  // B's own automatic host is already served: a domain there would never be.
  isReserved(
    await ownerApi.POST('/api/domains', {
      body: { hostname: `web.rb.${BASE}`, app_id: appB, service: 'web', port: 80 },
    }),
    'own automatic host',
  );
  const own = await ownerApi.POST('/api/domains', {
    body: { hostname: `shop.rb.${BASE}`, app_id: appB, service: 'web', port: 80 },
  });
  assert.equal(own.response.status, 201, JSON.stringify(own.error));
  // Moving it to A (PATCH) or turning it into a redirect takes it out of B's namespace: refused.
  const id = own.data!.domain.id;
  isReserved(
    await ownerApi.PATCH('/api/domains/{id}', {
      params: { path: { id } },
      body: { app_id: appA, service: 'web', port: 80 },
    }),
    'PATCH to A',
  );
  isReserved(
    await ownerApi.PATCH('/api/domains/{id}', {
      params: { path: { id } },
      body: { redirect_to: 'example.org' },
    }),
    'PATCH to a redirect',
  );
  const still = await ownerApi.GET('/api/domains/{id}', { params: { path: { id } } });
  assert.equal(still.data!.domain.app_id, appB);
  // Hosts outside every app's namespace stay free.
  const free = await limitedA.POST('/api/domains', {
    body: { hostname: `ra-shop.example.net`, app_id: appA, service: 'web', port: 80 },
  });
  assert.equal(free.response.status, 201, JSON.stringify(free.error));
});

test('an app created or imported later whose hosts would take a custom domain is refused, naming the domain', async () => {
  const d = await ownerApi.POST('/api/domains', {
    body: { hostname: `www.later.${BASE}`, app_id: appA, service: 'web', port: 80 },
  });
  assert.equal(d.response.status, 201, JSON.stringify(d.error));
  const made = await ownerApi.POST('/api/apps', {
    body: { name: 'later', source: { type: 'image', image: 'nginx:1.27' } },
  });
  assert.equal(made.response.status, 409, JSON.stringify(made.error));
  assert.match(
    (made.error as { error: string }).error,
    new RegExp(`www\\.later\\.${BASE.replace(/\./g, '\\.')}`),
  );
  const imported = await ownerApi.POST('/api/apps/import', {
    body: {
      name: 'later',
      source: { type: 'image', image: 'nginx:1.27' },
    },
  });
  assert.equal(imported.response.status, 409, JSON.stringify(imported.error));
  const apps = await ownerApi.GET('/api/apps');
  assert.ok(!apps.data!.items.some((a) => a.name === 'later'), 'no app was made');
  await ownerApi.DELETE('/api/domains/{id}', { params: { path: { id: d.data!.domain.id } } });
});

test('an audit revert cannot bring back a domain that has become reserved since', async () => {
  const d = await ownerApi.POST('/api/domains', {
    body: { hostname: `shop.rc.${BASE}`, app_id: appA, service: 'web', port: 80 },
  });
  assert.equal(d.response.status, 201, JSON.stringify(d.error));
  const id = d.data!.domain.id;
  assert.equal(
    (await ownerApi.DELETE('/api/domains/{id}', { params: { path: { id } } })).response.status,
    200,
  );
  const entry = (await owner.req('GET', `/api/audit?action=domain.deleted&target=${id}`)).body.items[0];
  assert.ok(entry, 'the deletion is audited');
  // App rc is created now: shop.rc.<base> lies in its namespace.
  const rc = await ownerApi.POST('/api/apps', {
    body: { name: 'rc', source: { type: 'image', image: 'nginx:1.27' } },
  });
  assert.equal(rc.response.status, 201, JSON.stringify(rc.error));
  const r = await ownerApi.POST('/api/audit/{id}/revert', {
    params: { path: { id: String(entry.id) } },
    body: { force: true },
  });
  isReserved(r, 'revert', 'rc');
  const all = await ownerApi.GET('/api/domains');
  assert.ok(!all.data!.items.some((x) => x.hostname === `shop.rc.${BASE}` && 'id' in x));
});

test("a base domain under which a custom domain would be another app's host is refused, naming it", async () => {
  const d = await ownerApi.POST('/api/domains', {
    body: { hostname: 'rb.other.test', app_id: appA, service: 'web', port: 80 },
  });
  assert.equal(d.response.status, 201, JSON.stringify(d.error));
  const r = await ownerApi.PUT('/api/instance/base-domain', { body: { base_domain: 'Other.Test.' } });
  assert.equal(r.response.status, 409, JSON.stringify(r.error));
  assert.match((r.error as { error: string }).error, /rb\.other\.test is reserved for app "rb"/);
  const now = await ownerApi.GET('/api/instance/base-domain');
  assert.equal(now.data!.base_domain, BASE, 'the base domain did not change');
  await ownerApi.DELETE('/api/domains/{id}', { params: { path: { id: d.data!.domain.id } } });
});

test('a custom domain saved before the rule is not served over an automatic host, and the listing says so', async () => {
  await insertDomainRow(s.env, '01legacylegacylegacylegac', `web.rb.${BASE}`, appA);
  const list = await ownerApi.GET('/api/domains');
  const legacy = list.data!.items.find((d) => 'id' in d && d.hostname === `web.rb.${BASE}`)!;
  assert.equal(legacy.status, 'error');
  assert.match(legacy.status_detail, /automatic host/);
  const auto = list.data!.items.find((d) => !('id' in d) && d.hostname === `web.rb.${BASE}`);
  assert.equal(auto?.app_id, appB, "B's automatic host is listed and served");
  await s.env.db.deleteFrom('domains').where('id', '=', '01legacylegacylegacylegac').execute();
});

test('planRoutes: a custom domain never shadows an automatic host', () => {
  // Cast through unknown: only route selection is under test, not how upstreams are named.
  const rows = {
    settings: {
      httpPort: 80,
      httpsPort: 443,
      accessLog: '/dev/null',
      acme: { ca: 'https://ca.invalid/directory', caRoot: null, email: null },
      controlUpstream: '127.0.0.1:9393',
    },
    baseDomain: BASE,
    controlDomain: `svc.${BASE}`,
    apps: [
      { id: 'a', name: 'ra', services: [{ name: 'web', port: 80 }] },
      { id: 'b', name: 'rb', services: [{ name: 'web', port: 80 }] },
      { id: 'p', name: 'rb-pr-1', label: 'pr-1-rb', services: [{ name: 'web', port: 80 }] },
    ],
    domains: ['rb', 'pr-1-rb'].map((l, i) => ({
      id: `d${i}`,
      hostname: `${l}.${BASE}`,
      app_id: 'a',
      service: 'web',
      port: 80,
      redirect_to: null,
    })),
    certificates: [],
    upstreams: [
      { app_id: 'a', service: 'web', addresses: ['10.0.0.1'] },
      { app_id: 'b', service: 'web', addresses: ['10.0.0.2'] },
      { app_id: 'p', service: 'web', addresses: ['10.0.0.3'] },
    ],
    hosts: new Map(),
    engineSubnets: [],
  } as unknown as EdgeRows;
  const routes = planRoutes(rows);
  for (const [host, id] of [
    [`rb.${BASE}`, 'svc-auto-b-web'],
    [`pr-1-rb.${BASE}`, 'svc-auto-p-web'],
  ]) {
    const r = routes.filter((x) => x.hostname === host);
    assert.equal(r.length, 1, host);
    assert.equal(r[0]!.id, id, `${host} goes to its own app`);
  }
});
