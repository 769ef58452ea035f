// Domain rules, rows, uploaded-certificate checks, statuses and certificate events, over a real
// (in-memory) database; certificates are made with openssl.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { checkHostname } from '#lib/util/hostname.js';
import {
  createDomain,
  updateDomain,
  putCertificate,
  deleteCertificate,
  getDomainRow,
  setBaseDomain,
  getBaseDomain,
  keyBinding,
} from '#lib/domains/store.js';
import { validateCertificate } from '#lib/domains/certificate.js';
import { computeStatus, domainView, ISSUE_TIMEOUT_MS } from '#lib/domains/status.js';
import {
  DomainChecker,
  CERTIFICATE_TOPIC,
  type CertificateEvent,
  type CheckTarget,
} from '#lib/domains/checker.js';
import type { HostCheckRow } from '#lib/domains/store.js';
import { insertApp, patchServiceSettings } from '#lib/apps/store.js';
import { HttpError } from '#lib/http/errors.js';
import { createLogger } from '#lib/log.js';
import { memoryEnv } from '../../_support/env.js';
import { needEdge } from '../../_support/edge.js';
import { makeCa, issue } from '../../_support/pki.js';

const run = promisify(execFile);
const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

function refusal(e: unknown, code: string, status: number): boolean {
  return e instanceof HttpError && e.code === code && e.status === status;
}

test('hostnames: lower-cased, trailing dot dropped; every refusal names its rule', () => {
  assert.deepEqual(checkHostname('Shop.Example.COM.'), { ok: true, hostname: 'shop.example.com' });
  assert.deepEqual(checkHostname('xn--bcher-kva.example'), { ok: true, hostname: 'xn--bcher-kva.example' });
  const cases: Array<[unknown, string, RegExp]> = [
    ['shop example.com', 'spaces', /spaces/],
    [' shop.example.com', 'spaces', /spaces/],
    ['*.example.com', 'wildcard', /wildcard/],
    ['https://shop.example.com/', 'slash', /"\/"/],
    ['shop.example.com/path', 'slash', /"\/"/],
    ['shop.example.com:443', 'colon', /":"/],
    ['admin@shop.example.com', 'at', /"@"/],
    ['shop..example.com', 'empty_label', /empty label/],
    ['.example.com', 'empty_label', /empty label/],
    [`${'a'.repeat(64)}.example.com`, 'label_length', /at most 63/],
    [`${'a.'.repeat(126)}com`, 'length', /at most 253/],
    ['localhost', 'single_label', /two labels/],
    ['bücher.example', 'ascii', /punycode.*xn--bcher-kva\.example/],
    ['-shop.example.com', 'ldh', /hyphen/],
    ['shop_.example.com', 'ldh', /letters, digits and hyphens/],
    ['10.0.0.1', 'ip_address', /IP address/],
    ['', 'empty', /empty/],
    [42, 'type', /string/],
  ];
  for (const [input, rule, message] of cases) {
    const r = checkHostname(input);
    assert.equal(r.ok, false, String(input));
    if (!r.ok) {
      assert.equal(r.rule, rule, String(input));
      assert.match(r.message, message, String(input));
    }
  }
  // 63-character labels and 253 characters in all are still fine.
  assert.equal(checkHostname(`${'a'.repeat(63)}.example.com`).ok, true);
  assert.equal(checkHostname(`${'a.'.repeat(125)}abc`).ok, true);
});

test('domain rows: duplicates and the control domain are 409; bad targets are 400; a refusal stores nothing', async () => {
  const env = await memoryEnv();
  const app = await insertApp(env.db, 'shop', { type: 'image', image: 'x' });
  await patchServiceSettings(env.db, app.id, 'web', { port: 3000 });
  await patchServiceSettings(env.db, app.id, 'worker', { health_path: '/h' });
  const rules = { reserved: ['svc.example.com'] };
  const d = await createDomain(
    env.db,
    { hostname: 'Shop.Example.com.', app_id: app.id, service: 'web' },
    rules,
  );
  assert.equal(d.hostname, 'shop.example.com');
  const count = async () =>
    (await env.db.selectFrom('domains').select(env.db.fn.countAll().as('n')).executeTakeFirstOrThrow()).n;

  await assert.rejects(
    createDomain(env.db, { hostname: 'shop.example.com', redirect_to: 'x.example.com' }, rules),
    (e) => refusal(e, 'conflict', 409),
  );
  await assert.rejects(createDomain(env.db, { hostname: 'SHOP.example.com' }, rules), (e) =>
    refusal(e, 'conflict', 409),
  );
  await assert.rejects(createDomain(env.db, { hostname: 'svc.example.com' }, rules), (e) =>
    refusal(e, 'conflict', 409),
  );
  await assert.rejects(
    createDomain(env.db, { hostname: 'w.example.com', app_id: app.id, service: 'worker' }, rules),
    (e: any) => refusal(e, 'bad_request', 400) && /no port/.test(e.message),
  );
  await assert.rejects(
    createDomain(env.db, { hostname: 'w.example.com', app_id: app.id, service: 'nope' }, rules),
    (e) => refusal(e, 'bad_request', 400),
  );
  await assert.rejects(
    createDomain(env.db, { hostname: 'w.example.com', app_id: 'missing', service: 'web' }, rules),
    (e) => refusal(e, 'bad_request', 400),
  );
  await assert.rejects(
    createDomain(
      env.db,
      { hostname: 'w.example.com', app_id: app.id, service: 'web', redirect_to: 'x.example.com' },
      rules,
    ),
    (e) => refusal(e, 'bad_request', 400),
  );
  await assert.rejects(
    createDomain(env.db, { hostname: 'w.example.com', redirect_to: 'W.example.com' }, rules),
    (e) => refusal(e, 'bad_request', 400),
  );
  await assert.rejects(
    createDomain(env.db, { hostname: 'w.example.com', redirect_to: 'not a host' }, rules),
    (e: any) => refusal(e, 'bad_request', 400) && e.details[0].rule === 'spaces',
  );
  await assert.rejects(
    createDomain(env.db, { hostname: 'w.example.com', app_id: app.id, service: 'web', port: 70000 }, rules),
    (e) => refusal(e, 'bad_request', 400),
  );
  await assert.rejects(
    createDomain(env.db, { hostname: 'a b.example.com' }, rules),
    (e: any) =>
      refusal(e, 'bad_request', 400) && e.details[0].field === 'hostname' && e.details[0].rule === 'spaces',
  );
  assert.equal(Number(await count()), 1, 'nothing half-done');
  // A port on the domain makes a portless service routable.
  const w = await createDomain(
    env.db,
    { hostname: 'w.example.com', app_id: app.id, service: 'worker', port: 8080 },
    rules,
  );
  assert.equal(w.port, 8080);
});

test('reassigning: to another service, to a redirect and back; the hostname cannot change', async () => {
  const env = await memoryEnv();
  const a = await insertApp(env.db, 'a', { type: 'image', image: 'x' });
  const b = await insertApp(env.db, 'b', { type: 'image', image: 'x' });
  await patchServiceSettings(env.db, a.id, 'web', { port: 1 });
  await patchServiceSettings(env.db, b.id, 'api', { port: 2 });
  const d = await createDomain(
    env.db,
    { hostname: 'x.example.com', app_id: a.id, service: 'web' },
    { reserved: [] },
  );
  let r = await updateDomain(env.db, d.id, { app_id: b.id, service: 'api' });
  assert.deepEqual([r.before.app_id, r.after.app_id, r.after.service], [a.id, b.id, 'api']);
  r = await updateDomain(env.db, d.id, { redirect_to: 'y.example.com' });
  assert.deepEqual([r.after.app_id, r.after.service, r.after.redirect_to], [null, null, 'y.example.com']);
  r = await updateDomain(env.db, d.id, { app_id: a.id, service: 'web' });
  assert.deepEqual([r.after.app_id, r.after.redirect_to], [a.id, null]);
  await assert.rejects(updateDomain(env.db, d.id, { hostname: 'z.example.com' }), (e) =>
    refusal(e, 'bad_request', 400),
  );
  await assert.rejects(updateDomain(env.db, d.id, { app_id: b.id, service: 'web' }), (e) =>
    refusal(e, 'bad_request', 400),
  );
  assert.equal((await getDomainRow(env.db, d.id)).app_id, a.id, 'a refused patch changes nothing');
  await assert.rejects(updateDomain(env.db, 'nope', {}), (e) => refusal(e, 'not_found', 404));
});

test('the base domain: the instance setting wins over SVC_BASE_DOMAIN, null clears, the same hostname rules apply', async () => {
  const env = await memoryEnv();
  assert.equal(await getBaseDomain(env.db, 'env.example.com'), 'env.example.com');
  assert.equal(await setBaseDomain(env.db, 'Apps.Example.com'), 'apps.example.com');
  assert.equal(await getBaseDomain(env.db, 'env.example.com'), 'apps.example.com');
  assert.equal(await setBaseDomain(env.db, null), null);
  assert.equal(await getBaseDomain(env.db, 'env.example.com'), null);
  await assert.rejects(
    setBaseDomain(env.db, '*.example.com'),
    (e: any) => refusal(e, 'bad_request', 400) && e.details[0].rule === 'wildcard',
  );
});

test('uploaded certificates: the pair must match, cover the host and be valid now; the key is sealed; a refusal stores nothing', async (t) => {
  if (!(await needEdge(t))) return;
  const dir = await mkdtemp(join(tmpdir(), 'svc-certs-'));
  dirs.push(dir);
  const ca = await makeCa(dir, 'svc test upload CA');
  const good = await issue(ca, ['shop.example.com', 'www.shop.example.com']);
  const other = await issue(ca, ['other.example.com']);
  const wildcard = await issue(ca, ['*.example.com']);
  const env = await memoryEnv();
  const app = await insertApp(env.db, 'shop', { type: 'image', image: 'x' });
  await patchServiceSettings(env.db, app.id, 'web', { port: 3000 });
  const d = await createDomain(
    env.db,
    { hostname: 'shop.example.com', app_id: app.id, service: 'web' },
    { reserved: [] },
  );
  const stored = async () => env.db.selectFrom('domain_certificates').selectAll().execute();

  const bad: Array<[string, { cert_pem?: unknown; key_pem?: unknown }, RegExp, number?]> = [
    ['key of another certificate', { cert_pem: good.certPem, key_pem: other.keyPem }, /does not match/],
    [
      'certificate for another host',
      { cert_pem: other.certPem, key_pem: other.keyPem },
      /does not cover shop\.example\.com \(it covers other\.example\.com\)/,
    ],
    ['expired', { cert_pem: good.certPem, key_pem: good.keyPem }, /expired on/, Date.now() + 10 * 86_400_000],
    [
      'not valid yet',
      { cert_pem: good.certPem, key_pem: good.keyPem },
      /not valid before/,
      Date.now() - 10 * 86_400_000,
    ],
    ['a CA certificate first', { cert_pem: ca.certPem, key_pem: good.keyPem }, /CA certificate/],
    ['no PEM at all', { cert_pem: 'hello', key_pem: good.keyPem }, /no PEM certificate/],
    [
      'garbage key',
      { cert_pem: good.certPem, key_pem: '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n' },
      /not a PEM private key/,
    ],
    ['missing key', { cert_pem: good.certPem }, /key_pem must be/],
    [
      'chain out of order',
      { cert_pem: ca.certPem + good.certPem, key_pem: good.keyPem },
      /CA certificate|did not issue/,
    ],
    [
      'unrelated second certificate',
      { cert_pem: good.certPem + other.certPem, key_pem: good.keyPem },
      /did not issue/,
    ],
  ];
  for (const [what, input, message, now] of bad) {
    await assert.rejects(
      putCertificate(env.db, env.sealer, d.id, input, now),
      (e: any) => refusal(e, 'bad_request', 400) && message.test(e.message),
      what,
    );
  }
  const { stdout: encrypted } = await run('openssl', [
    'pkey',
    '-in',
    good.keyPath,
    '-aes256',
    '-passout',
    'pass:secret',
  ]);
  await assert.rejects(
    putCertificate(env.db, env.sealer, d.id, { cert_pem: good.certPem, key_pem: encrypted }),
    (e: any) => refusal(e, 'bad_request', 400) && /encrypted/.test(e.message),
  );
  assert.deepEqual(await stored(), [], 'nothing stored after a refusal');

  const row = await putCertificate(env.db, env.sealer, d.id, {
    cert_pem: good.certPem + ca.certPem,
    key_pem: good.keyPem,
  });
  assert.equal(row.issuer, 'svc test upload CA');
  assert.ok(!row.key_sealed.includes('PRIVATE KEY'));
  assert.match(env.sealer.open(row.key_sealed, keyBinding(d.id)), /BEGIN PRIVATE KEY/);
  assert.throws(() => env.sealer.open(row.key_sealed, keyBinding('another-domain')), 'bound to its domain');
  assert.equal((await stored()).length, 1);
  // A wildcard covers the name too; uploading again replaces the first one.
  await putCertificate(env.db, env.sealer, d.id, { cert_pem: wildcard.certPem, key_pem: wildcard.keyPem });
  assert.equal((await stored()).length, 1);
  assert.equal(await deleteCertificate(env.db, d.id), true);
  assert.deepEqual(await stored(), []);
  // Without a master key nothing can be sealed: 503, nothing stored.
  const keyless = await memoryEnv({ SVC_MASTER_KEY: '' });
  const app2 = await insertApp(keyless.db, 'shop', { type: 'image', image: 'x' });
  await patchServiceSettings(keyless.db, app2.id, 'web', { port: 3000 });
  const d2 = await createDomain(
    keyless.db,
    { hostname: 'shop.example.com', app_id: app2.id, service: 'web' },
    { reserved: [] },
  );
  await assert.rejects(
    putCertificate(keyless.db, keyless.sealer, d2.id, { cert_pem: good.certPem, key_pem: good.keyPem }),
    (e) => refusal(e, 'service_unavailable', 503),
  );
  assert.equal(validateCertificate(good.certPem, good.keyPem, 'www.shop.example.com').info.names.length, 2);
});

function check(over: Partial<HostCheckRow> = {}): HostCheckRow {
  return {
    hostname: 'h.example.com',
    dns_resolved: '["127.0.0.1"]',
    dns_expected: '["127.0.0.1"]',
    dns_points_here: 1,
    dns_error: null,
    dns_checked_at: '2030-01-01T00:00:00.000Z',
    cert_issuer: null,
    cert_not_after: null,
    cert_fingerprint256: null,
    cert_error: null,
    cert_checked_at: null,
    issuing_since: '2030-01-01T00:00:00.000Z',
    notified: null,
    updated_at: '2030-01-01T00:00:00.000Z',
    ...over,
  };
}

test('statuses: unassigned, awaiting_dns, issuing, active, error', () => {
  const now = Date.parse('2030-01-01T00:05:00.000Z');
  const s = (i: Partial<Parameters<typeof computeStatus>[0]>) =>
    computeStatus({ assigned: true, uploaded: null, check: check(), now, ...i });
  assert.equal(s({ assigned: false }).status, 'unassigned');
  assert.equal(s({ check: null }).status, 'awaiting_dns');
  const away = s({ check: check({ dns_points_here: 0, dns_resolved: '["203.0.113.7"]' }) });
  assert.equal(away.status, 'awaiting_dns');
  assert.match(away.detail, /203\.0\.113\.7.*not to this host \(127\.0\.0\.1\)/);
  assert.match(
    s({
      check: check({ dns_points_here: 0, dns_resolved: '[]', dns_error: 'the name does not exist in DNS' }),
    }).detail,
    /does not exist/,
  );
  assert.equal(s({}).status, 'issuing');
  assert.equal(s({ now: Date.parse('2030-01-01T00:00:00.000Z') + ISSUE_TIMEOUT_MS }).status, 'error');
  const served = check({
    cert_issuer: 'Pebble Intermediate CA',
    cert_not_after: '2030-03-01T00:00:00.000Z',
    cert_fingerprint256: 'AA',
  });
  assert.equal(s({ check: served }).status, 'active');
  assert.equal(s({ check: served, now: Date.parse('2030-03-02T00:00:00.000Z') }).status, 'error');
  const uploaded = { issuer: 'Mine', not_after: '2030-02-01T00:00:00.000Z', fingerprint256: 'BB' };
  assert.equal(s({ uploaded, check: served }).status, 'issuing', 'the proxy still serves the old one');
  assert.equal(s({ uploaded, check: check({ cert_fingerprint256: 'BB' }) }).status, 'active');
  assert.equal(
    s({ uploaded, check: check({ cert_fingerprint256: 'BB' }), now: Date.parse('2030-02-02T00:00:00.000Z') })
      .status,
    'error',
  );
  // The wire shape of a domain.
  const v = domainView(
    {
      id: 'D',
      hostname: 'h.example.com',
      app_id: 'A',
      service: 'web',
      port: null,
      redirect_to: null,
      created_at: 'c',
      updated_at: 'u',
    },
    null,
    served,
    now,
  );
  assert.deepEqual(Object.keys(v).sort(), [
    'app_id',
    'certificate',
    'created_at',
    'dns',
    'hostname',
    'id',
    'port',
    'redirect_to',
    'service',
    'status',
    'status_detail',
    'updated_at',
  ]);
  assert.deepEqual(v.certificate, {
    source: 'acme',
    issuer: 'Pebble Intermediate CA',
    not_after: '2030-03-01T00:00:00.000Z',
  });
  assert.deepEqual(v.dns, {
    addresses: ['127.0.0.1'],
    points_here: true,
    checked_at: '2030-01-01T00:00:00.000Z',
  });
});

test('certificate events: certificate_error once per episode, certificate_expiring once per certificate (14 days ahead)', async () => {
  const env = await memoryEnv();
  let now = Date.parse('2030-01-01T00:00:00.000Z');
  let served: { issuer: string; not_after: string; fingerprint256: string } | null = null;
  let pointsHere = true;
  const events: CertificateEvent[] = [];
  await env.bus.subscribe(CERTIFICATE_TOPIC, (e) => events.push(e.data as CertificateEvent));
  const changes: string[] = [];
  const target: CheckTarget = {
    hostname: 'h.example.com',
    domainId: 'D1',
    appId: 'A1',
    service: 'web',
    tls: 'acme',
    uploaded: null,
  };
  const checker = new DomainChecker({
    db: env.db,
    bus: env.bus,
    log: createLogger('silent'),
    now: () => now,
    dns: async (host) => ({
      host,
      expected: ['127.0.0.1'],
      resolved: [pointsHere ? '127.0.0.1' : '203.0.113.9'],
      points_here: pointsHere,
      checked_at: new Date(now).toISOString(),
    }),
    probe: async () =>
      served
        ? {
            cert: {
              ...served,
              subject: 'h',
              not_before: '2029-01-01T00:00:00.000Z',
              names: ['h.example.com'],
            },
          }
        : { cert: null, error: 'no certificate is served for this name yet' },
    targets: async () => [target],
    onChange: (h) => changes.push(h),
  });
  await checker.refresh('h.example.com');
  assert.deepEqual(changes, ['h.example.com'], 'DNS now points here: the proxy must hand the host to the CA');
  assert.equal(events.length, 0);
  now += ISSUE_TIMEOUT_MS + 1000;
  await checker.refresh('h.example.com');
  await checker.refresh('h.example.com');
  assert.deepEqual(
    events.map((e) => e.type),
    ['certificate_error'],
    'published once, not at every check',
  );
  assert.equal(events[0]!.domain_id, 'D1');
  assert.match(events[0]!.detail, /No certificate after/);

  served = {
    issuer: 'Pebble',
    not_after: new Date(now + 30 * 86_400_000).toISOString(),
    fingerprint256: 'F1',
  };
  await checker.refresh('h.example.com');
  assert.equal(changes.length, 2, 'a served certificate turns HTTP redirects on');
  assert.equal(events.length, 1);
  now += 20 * 86_400_000;
  await checker.refresh('h.example.com');
  await checker.refresh('h.example.com');
  assert.deepEqual(
    events.map((e) => e.type),
    ['certificate_error', 'certificate_expiring'],
  );
  assert.match(events[1]!.detail, /expires in 10 days/);
  served = {
    issuer: 'Pebble',
    not_after: new Date(now + 5 * 86_400_000).toISOString(),
    fingerprint256: 'F2',
  };
  await checker.refresh('h.example.com');
  assert.deepEqual(
    events.map((e) => e.type),
    ['certificate_error', 'certificate_expiring', 'certificate_expiring'],
    'a new certificate near its end is announced again',
  );
  // A host that stops pointing here is no longer probed, and its certificate no longer counts.
  pointsHere = false;
  const row = await checker.refresh('h.example.com');
  assert.equal(row.dns_points_here, 0);
  assert.equal(row.cert_fingerprint256, null);
  await checker.stop();
});
