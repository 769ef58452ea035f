// Caddy's config as a pure function of rows: no Caddy needed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  automaticHosts,
  buildCaddyConfig,
  canonicalJson,
  certificateNames,
  certificateTag,
  effectiveControlDomain,
  hostAttribution,
  planRoutes,
  withOwned,
  ACCESS_LOGGER_NAMESPACE,
  NO_CACHED_CERTIFICATE,
  type EdgeRows,
  type HostState,
} from '#lib/proxy/config.js';
import { ProxySync } from '#lib/proxy/sync.js';
import { CaddyError, type CaddyClient } from '#lib/proxy/caddy.js';
import { createLogger } from '#lib/log.js';

const settings = {
  httpPort: 8080,
  httpsPort: 8443,
  accessLog: '/var/log/caddy/access.log',
  acme: { ca: 'https://acme.test/dir', caRoot: '/etc/svc/ca.pem', email: 'ops@example.com' },
  controlUpstream: '127.0.0.1:9393',
  resolver: 'udp/127.0.0.1:2053',
  wakeToken: 'tok',
};

function rows(over: Partial<EdgeRows> = {}): EdgeRows {
  const ready: HostState = { pointsHere: true, certReady: true };
  return {
    settings,
    baseDomain: 'apps.example.com',
    controlDomain: 'svc.apps.example.com',
    apps: [
      {
        id: 'A1',
        name: 'shop',
        services: [
          { name: 'api', port: 8000 },
          { name: 'web', port: 3000 },
          { name: 'worker', port: null },
        ],
      },
      { id: 'A2', name: 'blog', services: [{ name: 'web', port: 80 }] },
    ],
    domains: [
      { id: 'D1', hostname: 'shop.com', app_id: 'A1', service: 'web', port: null, redirect_to: null },
      {
        id: 'D2',
        hostname: 'www.shop.com',
        app_id: null,
        service: null,
        port: null,
        redirect_to: 'shop.com',
      },
      { id: 'D3', hostname: 'parked.com', app_id: null, service: null, port: null, redirect_to: null },
      { id: 'D4', hostname: 'new.shop.com', app_id: 'A1', service: 'api', port: 9000, redirect_to: null },
      { id: 'D5', hostname: 'upload.shop.com', app_id: 'A2', service: 'web', port: null, redirect_to: null },
    ],
    certificates: [{ domain_id: 'D5', cert_pem: 'CERT', key_pem: 'KEY' }],
    hosts: new Map<string, HostState>([
      ['shop.com', ready],
      ['www.shop.com', ready],
      ['new.shop.com', { pointsHere: false, certReady: false }],
      ['svc.apps.example.com', ready],
      ['shop.apps.example.com', { pointsHere: true, certReady: false }],
      ['web.shop.apps.example.com', ready],
      ['blog.apps.example.com', ready],
    ]),
    ...over,
  };
}

type Route = { '@id': string; match: Array<{ host: string[] }>; handle: Array<Record<string, any>> };
function servers(cfg: ReturnType<typeof buildCaddyConfig>) {
  const s = cfg.http.servers as Record<string, { routes: Route[]; listen: string[] }>;
  return { http: s.svc_http!, https: s.svc_https! };
}
const byHost = (routes: Route[], host: string) => routes.filter((r) => r.match?.[0]?.host.includes(host));

test('automatic hosts: <app>.<base> for the first service with a port, <service>.<app>.<base> for the others', () => {
  const hosts = automaticHosts('apps.example.com', rows().apps);
  assert.deepEqual(
    hosts.map((h) => [h.hostname, h.appId, h.service, h.port]),
    [
      ['shop.apps.example.com', 'A1', 'api', 8000],
      ['web.shop.apps.example.com', 'A1', 'web', 3000],
      ['blog.apps.example.com', 'A2', 'web', 80],
    ],
  );
  assert.deepEqual(automaticHosts(null, rows().apps), []);
  // Names that are not DNS labels are left out, not mangled into something else.
  assert.deepEqual(
    automaticHosts('b.com', [
      {
        id: 'X',
        name: 'ok',
        services: [
          { name: 'a', port: 1 },
          { name: 'Bad_Name', port: 2 },
        ],
      },
    ]).map((h) => h.hostname),
    ['ok.b.com'],
  );
  assert.deepEqual(
    automaticHosts('b.com', [{ id: 'X', name: 'trailing-', services: [{ name: 'a', port: 1 }] }]),
    [],
  );
});

test('the control domain defaults to svc.<base>', () => {
  assert.equal(effectiveControlDomain(null, 'apps.example.com'), 'svc.apps.example.com');
  assert.equal(effectiveControlDomain('panel.example.net', 'apps.example.com'), 'panel.example.net');
  assert.equal(effectiveControlDomain(null, null), null);
});

test('routes: one per hostname, tagged with the contract ids; unassigned domains are not served', () => {
  const routes = planRoutes(rows());
  assert.deepEqual(
    routes.map((r) => [r.id, r.hostname, r.tls]),
    [
      ['svc-control', 'svc.apps.example.com', 'acme'],
      ['svc-route-D4', 'new.shop.com', 'none'],
      ['svc-route-D1', 'shop.com', 'acme'],
      ['svc-route-D5', 'upload.shop.com', 'uploaded'],
      ['svc-route-D2', 'www.shop.com', 'acme'],
      ['svc-auto-A1-api', 'shop.apps.example.com', 'acme'],
      ['svc-auto-A1-web', 'web.shop.apps.example.com', 'acme'],
      ['svc-auto-A2-web', 'blog.apps.example.com', 'acme'],
    ],
  );
  // The automatic host wins over a custom domain of the same name (another app's domain must never
  // take its traffic, lib/proxy/reserved.ts); the control domain wins over both.
  const clash = planRoutes(
    rows({
      domains: [
        {
          id: 'D9',
          hostname: 'blog.apps.example.com',
          app_id: 'A1',
          service: 'web',
          port: null,
          redirect_to: null,
        },
        {
          id: 'D8',
          hostname: 'svc.apps.example.com',
          app_id: 'A1',
          service: 'web',
          port: null,
          redirect_to: null,
        },
      ],
    }),
  );
  assert.deepEqual(
    clash.filter((r) => r.hostname === 'blog.apps.example.com').map((r) => r.id),
    ['svc-auto-A2-web'],
  );
  assert.deepEqual(
    clash.filter((r) => r.hostname === 'svc.apps.example.com').map((r) => r.id),
    ['svc-control'],
  );
});

test("upstreams: a service's route looks its containers up at the control plane's resolver, on the domain's port, else the service's", () => {
  const cfg = buildCaddyConfig(planRoutes(rows()), settings, rows().certificates);
  const { https, http } = servers(cfg);
  const shop = byHost(https.routes, 'shop.com')[0]!;
  assert.equal(shop['@id'], 'svc-route-D1');
  assert.deepEqual(shop.handle[0]!.dynamic_upstreams, {
    source: 'a',
    name: '3000.web.A1.svc.internal.',
    port: '3000',
    refresh: '250ms',
    resolver: { addresses: ['udp/127.0.0.1:2053'] },
    dial_timeout: '1s',
  });
  // A failed dial (a container restarting, the control plane restarting) is tried again.
  assert.equal(shop.handle[0]!.load_balancing.try_duration, '5s');
  const api = byHost(http.routes, 'new.shop.com')[0]!;
  assert.equal(api.handle[0]!.dynamic_upstreams.name, '9000.api.A1.svc.internal.');
  assert.equal(api.handle[0]!.dynamic_upstreams.port, '9000');
  const control = byHost(https.routes, 'svc.apps.example.com')[0]!;
  assert.deepEqual(control.handle[0]!.upstreams, [{ dial: '127.0.0.1:9393' }]);
  assert.equal(control.handle[0]!.dynamic_upstreams, undefined);
  // A service whose lookup finds nothing (no container, asleep) goes to the control plane's wake
  // path, and only that upstream gets the secret: an app container gets the header emptied.
  const blog = byHost(https.routes, 'blog.apps.example.com')[0]!.handle[0]!;
  assert.deepEqual(blog.upstreams, [{ dial: '127.0.0.1:9393' }]);
  assert.deepEqual(blog.headers, {
    request: {
      set: { 'X-Svc-Wake': ['{http.reverse_proxy.upstream.hostport}|tok A2 web 80'] },
      replace: {
        'X-Svc-Wake': [
          { search: '127.0.0.1:9393|', replace: '' },
          { search_regexp: '^.*\\|.*$', replace: '' },
        ],
      },
    },
  });
  // What the two replacements leave, as Caddy applies them (literal, then Go's regexp; RE2 and
  // JavaScript agree on this one): the secret for the control plane, nothing for anyone else.
  type Op = { search: string; search_regexp: string; replace: string };
  const ops = (blog as any).headers.request;
  const [lit, re] = ops.replace['X-Svc-Wake'] as [Op, Op];
  const apply = (dial: string) =>
    (ops.set['X-Svc-Wake'][0] as string)
      .replace('{http.reverse_proxy.upstream.hostport}', dial)
      .split(lit.search)
      .join(lit.replace)
      .replace(new RegExp(re.search_regexp), re.replace);
  assert.equal(apply('127.0.0.1:9393'), 'tok A2 web 80');
  assert.equal(apply('172.18.0.5:80'), '');
  assert.equal(apply('[fd00::7]:80'), '');
  // Without the secret there is no fallback: a failed lookup is Caddy's own 503.
  const bare = { ...settings, wakeToken: undefined };
  const plain = servers(buildCaddyConfig(planRoutes(rows({ settings: bare })), bare, rows().certificates));
  const b2 = byHost(plain.https.routes, 'blog.apps.example.com')[0]!.handle[0]!;
  assert.equal(b2.upstreams, undefined);
  assert.equal(b2.headers, undefined);
  // No resolver (it could not start): 503 rather than a route that can never answer.
  const none = { ...settings, resolver: undefined };
  const off = servers(buildCaddyConfig(planRoutes(rows({ settings: none })), none, rows().certificates));
  assert.equal(byHost(off.https.routes, 'shop.com')[0]!.handle[0]!.status_code, 503);
});

test('one host: sleeping and waking change no configuration; the lookup names stay the same', () => {
  const awake = buildCaddyConfig(planRoutes(rows()), settings, rows().certificates);
  const asleep = rows({ apps: rows().apps.map((a) => ({ ...a, sleeping: true })) });
  assert.equal(
    canonicalJson(buildCaddyConfig(planRoutes(asleep), settings, asleep.certificates)),
    canonicalJson(awake),
  );
  // A service whose name Go's resolver would refuse as a label (a trailing "-") is named by a digest.
  const odd = rows({
    apps: [{ id: 'A9', name: 'odd', services: [{ name: 'web-', port: 80 }] }],
    domains: [],
  });
  const oddHttp = servers(buildCaddyConfig(planRoutes(odd), settings, [])).http.routes;
  const name = byHost(oddHttp, 'odd.apps.example.com')[0]!.handle[0]!.dynamic_upstreams.name as string;
  assert.match(name, /^80\.h[0-9a-f]{20}\.A9\.svc\.internal\.$/);
});

test('HTTP: redirects to HTTPS once a certificate is served, serves hosts without one, redirect domains go straight to their target', () => {
  const { http, https } = servers(buildCaddyConfig(planRoutes(rows()), settings, rows().certificates));
  const shop = byHost(http.routes, 'shop.com')[0]!;
  assert.equal(shop['@id'], 'svc-route-D1-http');
  assert.deepEqual(shop.handle, [
    {
      handler: 'static_response',
      status_code: 308,
      headers: { Location: ['https://{http.request.host}:8443{http.request.uri}'] },
    },
  ]);
  // Issuing: DNS points here, the certificate is not served yet: the app answers over HTTP meanwhile.
  assert.equal(
    byHost(http.routes, 'shop.apps.example.com')[0]!.handle[0]!.dynamic_upstreams.name,
    '8000.api.A1.svc.internal.',
  );
  // Awaiting DNS: HTTP only, carrying the route's own id; no HTTPS route, no certificate.
  assert.equal(byHost(http.routes, 'new.shop.com')[0]!['@id'], 'svc-route-D4');
  assert.equal(byHost(https.routes, 'new.shop.com').length, 0);
  const www = byHost(http.routes, 'www.shop.com')[0]!;
  assert.deepEqual(www.handle, [
    {
      handler: 'static_response',
      status_code: 308,
      headers: { Location: ['https://shop.com{http.request.uri}'] },
    },
  ]);
  assert.deepEqual(byHost(https.routes, 'www.shop.com')[0]!.handle, www.handle);
  // Unknown hosts: 404 after every route, on both servers.
  assert.equal(http.routes.at(-1)!.handle[0]!.status_code, 404);
  assert.equal(https.routes.at(-1)!.handle[0]!.status_code, 404);
  assert.deepEqual(http.listen, [':8080']);
  assert.deepEqual(https.listen, [':8443']);
  const plain = servers(buildCaddyConfig(planRoutes(rows()), { ...settings, httpsPort: 443 }, [])).http;
  assert.deepEqual(byHost(plain.routes, 'shop.com')[0]!.handle[0]!.headers.Location, [
    'https://{http.request.host}{http.request.uri}',
  ]);
});

test('TLS: only hosts whose DNS points here go to the CA; uploaded certificates replace ACME; automatic HTTPS is off', () => {
  const cfg = buildCaddyConfig(planRoutes(rows()), settings, rows().certificates);
  const tls = cfg.tls as any;
  assert.deepEqual(tls.certificates.automate, [
    'blog.apps.example.com',
    'shop.apps.example.com',
    'shop.com',
    'svc.apps.example.com',
    'web.shop.apps.example.com',
    'www.shop.com',
  ]);
  assert.ok(!tls.certificates.automate.includes('new.shop.com'), 'awaiting DNS: not sent to the CA');
  assert.ok(!tls.certificates.automate.includes('upload.shop.com'), 'uploaded: not sent to the CA');
  assert.deepEqual(tls.certificates.load_pem, [
    { certificate: 'CERT', key: 'KEY', tags: [certificateTag('CERT')] },
  ]);
  const issuer = {
    module: 'acme',
    ca: 'https://acme.test/dir',
    email: 'ops@example.com',
    trusted_roots_pem_files: ['/etc/svc/ca.pem'],
    challenges: { http: { alternate_port: 8080 }, 'tls-alpn': { disabled: true } },
  };
  // The ACME hosts, and only they, load their certificate at the handshake when a reload left the
  // cache empty (on demand); every other name falls to the plain policy. No on-demand rate limit:
  // Caddy 2.6.2 panics on a later load without one.
  assert.deepEqual(tls.automation.policies, [
    { subjects: tls.certificates.automate, issuers: [issuer], on_demand: true },
    { issuers: [issuer] },
  ]);
  assert.equal(tls.automation.on_demand, undefined);
  const { http, https } = servers(cfg) as any;
  assert.deepEqual(http.automatic_https, { disable: true });
  assert.deepEqual(https.automatic_https, { disable: true });
  // An unreadable certificate could name anything: no ACME host is served from the cache then.
  assert.deepEqual(https.tls_connection_policies, [
    { match: { sni: ['upload.shop.com'] }, certificate_selection: { any_tag: [certificateTag('CERT')] } },
    { certificate_selection: { any_tag: [NO_CACHED_CERTIFICATE] } },
  ]);
  assert.equal(https.strict_sni_host, true);
  // Nothing anywhere uses Caddy's internal issuer.
  assert.doesNotMatch(JSON.stringify(cfg), /"internal"/);
  // No certificates at all: no empty lists for Caddy to puzzle over.
  const bare = buildCaddyConfig([], settings, []).tls as any;
  assert.equal(bare.certificates, undefined);
  assert.deepEqual(
    bare.automation.policies,
    [{ issuers: [issuer] }],
    'no on-demand policy without ACME hosts',
  );
});

/** Self-signed, for upload.shop.com, SVC.apps.example.com, shop.com, *.shop.apps.example.com and 10.0.0.1. */
const WIDE_PEM = `-----BEGIN CERTIFICATE-----
MIIB6TCCAY6gAwIBAgIUBW0ATx752xTKoW5wP8vxz+aGlqYwCgYIKoZIzj0EAwIw
GjEYMBYGA1UEAwwPdXBsb2FkLnNob3AuY29tMCAXDTI2MTEyNTIzMzIzNVoYDzIx
MjYxMTAxMjMzMjM1WjAaMRgwFgYDVQQDDA91cGxvYWQuc2hvcC5jb20wWTATBgcq
hkjOPQIBBggqhkjOPQMBBwNCAAR8XZptK0HMkC3/7zTytI5nWwPD6wFLHlgpdXiz
z0HNXNFHjfsGOsAatxcISw2oPrYGJp5oRMggRVnexYMvO1qKo4GvMIGsMB0GA1Ud
DgQWBBTVwPxLAG4E/P9BJg8YMtQbzmS0VDAfBgNVHSMEGDAWgBTVwPxLAG4E/P9B
Jg8YMtQbzmS0VDAPBgNVHRMBAf8EBTADAQH/MFkGA1UdEQRSMFCCD3VwbG9hZC5z
aG9wLmNvbYIUU1ZDLmFwcHMuZXhhbXBsZS5jb22CCHNob3AuY29tghcqLnNob3Au
YXBwcy5leGFtcGxlLmNvbYcECgAAATAKBggqhkjOPQQDAgNJADBGAiEA9ezxG6cV
2q4TPaV7lQd1K0mk/afkX+sva0ZoPIfEhwkCIQD/xbFrxBXf5yn3ZAtiNmVoADg7
oKkDBmLhfPN/nnQDXA==
-----END CERTIFICATE-----
`;

test('TLS: an uploaded certificate is selected only for its own domain; hosts it also names never take a certificate from the cache', () => {
  assert.deepEqual(certificateNames(WIDE_PEM), [
    'upload.shop.com',
    'upload.shop.com',
    'svc.apps.example.com',
    'shop.com',
    '*.shop.apps.example.com',
  ]);
  assert.equal(certificateNames('CERT'), null);
  const tag = certificateTag(WIDE_PEM);
  assert.match(tag, /^svc-cert-[0-9a-f]{32}$/);
  // The tag follows the chain's bytes, not the PEM's layout (Caddy caches one copy of a chain).
  assert.equal(certificateTag(WIDE_PEM.replace(/\n/g, '\r\n')), tag);
  assert.notEqual(certificateTag('CERT'), tag);

  const r = rows({ certificates: [{ domain_id: 'D5', cert_pem: WIDE_PEM, key_pem: 'KEY' }] });
  const cfg = buildCaddyConfig(planRoutes(r), settings, r.certificates);
  assert.deepEqual((cfg.tls as any).certificates.load_pem, [
    { certificate: WIDE_PEM, key: 'KEY', tags: [tag] },
  ]);
  assert.deepEqual((servers(cfg).https as any).tls_connection_policies, [
    { match: { sni: ['upload.shop.com'] }, certificate_selection: { any_tag: [tag] } },
    // The control domain, shop.com and web.shop.apps.example.com are named by the upload: not here.
    { match: { sni: ['blog.apps.example.com', 'shop.apps.example.com', 'www.shop.com'] } },
    { certificate_selection: { any_tag: [NO_CACHED_CERTIFICATE] } },
  ]);

  // Two domains given the same certificate share its tag: Caddy keeps the first copy's tags only.
  const twice = rows({
    certificates: [
      { domain_id: 'D5', cert_pem: WIDE_PEM, key_pem: 'KEY' },
      { domain_id: 'D1', cert_pem: WIDE_PEM, key_pem: 'KEY' },
    ],
  });
  const policies = (servers(buildCaddyConfig(planRoutes(twice), settings, twice.certificates)).https as any)
    .tls_connection_policies;
  assert.deepEqual(policies.slice(0, 2), [
    { match: { sni: ['shop.com'] }, certificate_selection: { any_tag: [tag] } },
    { match: { sni: ['upload.shop.com'] }, certificate_selection: { any_tag: [tag] } },
  ]);

  // No upload at all: every ACME host is served from the cache; other names still get nothing.
  const none = rows({ certificates: [] });
  assert.deepEqual(
    (servers(buildCaddyConfig(planRoutes(none), settings, [])).https as any).tls_connection_policies,
    [
      { match: { sni: (buildCaddyConfig(planRoutes(none), settings, []).tls as any).certificates.automate } },
      { certificate_selection: { any_tag: [NO_CACHED_CERTIFICATE] } },
    ],
  );
});

test('the control route proxies to the control plane on both ports, which refuses app networks itself: no subnet in the config', () => {
  const { http, https } = servers(buildCaddyConfig(planRoutes(rows()), settings, []));
  const control = byHost(https.routes, 'svc.apps.example.com');
  assert.equal(control.length, 1);
  assert.equal(control[0]!['@id'], 'svc-control');
  assert.deepEqual(control[0]!.handle, [
    {
      handler: 'reverse_proxy',
      upstreams: [{ dial: '127.0.0.1:9393' }],
      load_balancing: {
        selection_policy: { policy: 'round_robin' },
        try_duration: '5s',
        try_interval: '250ms',
      },
    },
  ]);
  const plain = byHost(http.routes, 'svc.apps.example.com')[0]!;
  assert.equal(plain['@id'], 'svc-control-http');
  assert.equal(plain.handle[0]!.status_code, 308);
  // Networks come and go with apps, previews and databases: none of that is in Caddy's config,
  // so none of it loads one (runtime/server.ts refuses by X-Forwarded-For against the live list).
  assert.ok(!JSON.stringify(buildCaddyConfig(planRoutes(rows()), settings, [])).includes('remote_ip'));
});

test('access log: JSON to SVC_ACCESS_LOG without headers or link tokens, and kept out of the default log', () => {
  const cfg = buildCaddyConfig(planRoutes(rows()), settings, []);
  assert.deepEqual((cfg.accessLogger as any).writer, {
    output: 'file',
    filename: '/var/log/caddy/access.log',
  });
  assert.equal((cfg.accessLogger as any).encoder.wrap.format, 'json');
  assert.deepEqual(Object.keys((cfg.accessLogger as any).encoder.fields).sort(), [
    'request>headers',
    'request>tls',
    'request>uri',
    'resp_headers',
  ]);
  // The uri keeps its path and query; only an invitation or reset token in it is cut out.
  const uri = (cfg.accessLogger as any).encoder.fields['request>uri'];
  assert.equal(uri.filter, 'regexp');
  const cut = (path: string) => path.replace(new RegExp(uri.regexp, 'g'), uri.value.replace('${1}', '$1'));
  assert.equal(cut('/api/invitations/abc_DEF-123/accept'), '/api/invitations/[redacted]/accept');
  assert.equal(cut('/invite/abc_DEF-123?x=1'), '/invite/[redacted]?x=1');
  assert.equal(cut('/api/operators/invitations'), '/api/operators/invitations');
  assert.equal(cut('/api/apps?invite=1'), '/api/apps?invite=1');
  assert.deepEqual((cfg.accessLogger as any).include, [ACCESS_LOGGER_NAMESPACE]);
  const { http, https } = servers(cfg) as any;
  assert.deepEqual(http.logs, { default_logger_name: 'svc' });
  assert.deepEqual(https.logs, { default_logger_name: 'svc' });
});

test('the loaded config keeps what the control plane does not own and pins the admin endpoint', () => {
  const owned = buildCaddyConfig(planRoutes(rows()), settings, []);
  const current = {
    admin: { listen: 'localhost:2019', origins: ['localhost:2019'] },
    storage: { module: 'file_system', root: '/var/lib/caddy' },
    apps: { http: { servers: { stale: { listen: [':80'] } } }, pki: { certificate_authorities: {} } },
    logging: { logs: { default: { level: 'WARN', exclude: ['x'] }, other: { level: 'DEBUG' } } },
  };
  const full = withOwned(current, owned, '127.0.0.1:2019') as any;
  assert.deepEqual(full.admin, current.admin);
  assert.deepEqual(full.storage, current.storage);
  assert.deepEqual(full.apps.pki, current.apps.pki);
  assert.equal(full.apps.http.servers.stale, undefined, 'routes and servers it has no row for are gone');
  assert.deepEqual(full.logging.logs.default, { level: 'WARN', exclude: ['x', ACCESS_LOGGER_NAMESPACE] });
  assert.deepEqual(full.logging.logs.other, { level: 'DEBUG' });
  assert.deepEqual(current.logging.logs.default.exclude, ['x'], 'the input is not mutated');
  // Caddy running with nothing: the admin endpoint stays where the control plane reaches it.
  assert.deepEqual((withOwned(null, owned, '127.0.0.1:2999') as any).admin, { listen: '127.0.0.1:2999' });
  // On a socket, a TCP listen in the config (resumed from before the move) goes back to the socket; its other settings stay.
  const sock = 'unix//run/caddy/admin.sock';
  assert.deepEqual((withOwned(current, owned, sock) as any).admin, {
    listen: sock,
    origins: ['localhost:2019'],
  });
  assert.equal(
    (withOwned({ admin: { listen: 'unix//run/other.sock' } }, owned, sock) as any).admin.listen,
    'unix//run/other.sock',
  );
  // Applying twice changes nothing: the periodic check compares exactly this.
  assert.equal(canonicalJson(withOwned(full, owned, 'x')), canonicalJson(full));
});

test('canonical JSON ignores key order and nothing else', () => {
  assert.equal(canonicalJson({ b: 1, a: [{ d: 2, c: 3 }] }), canonicalJson({ a: [{ c: 3, d: 2 }], b: 1 }));
  assert.notEqual(canonicalJson({ a: [1, 2] }), canonicalJson({ a: [2, 1] }));
  assert.notEqual(canonicalJson({ a: 1 }), canonicalJson({ a: '1' }));
});

test('request attribution follows the routes: services by host, redirects and the control domain count host-wide', () => {
  const map = hostAttribution(planRoutes(rows()));
  assert.deepEqual(map.get('shop.com'), { appId: 'A1', service: 'web' });
  assert.deepEqual(map.get('shop.apps.example.com'), { appId: 'A1', service: 'api' });
  assert.equal(map.get('www.shop.com'), undefined);
  assert.equal(map.get('svc.apps.example.com'), undefined);
  assert.equal(map.get('parked.com'), undefined);
});

/** Caddy's admin API in memory: `refuse` says why a config is refused (Caddy's 400), or null. */
function fakeCaddy(refuse: (config: string) => string | null) {
  let config: unknown = null;
  const loads: string[] = [];
  const client: CaddyClient = {
    adminUrl: 'http://127.0.0.1:2019',
    listen: '127.0.0.1:2019',
    getConfig: async () => structuredClone(config),
    async load(c) {
      const json = JSON.stringify(c);
      loads.push(json);
      const why = refuse(json);
      if (why) throw new CaddyError(`Caddy refused the configuration (400: ${why})`, false);
      config = JSON.parse(json);
    },
    reachable: async () => true,
    upstreams: async () => new Map(),
  };
  return { client, loads, current: () => config as any };
}
const onDemandPolicies = (cfg: any) =>
  cfg.apps.tls.automation.policies.filter((p: any) => p.on_demand).length;

test('sync: Caddy 2.6 gets the on-demand policy for the ACME hosts', async () => {
  const caddy = fakeCaddy(() => null);
  const st = await new ProxySync({
    client: caddy.client,
    rows: async () => rows(),
    log: createLogger('silent'),
  }).sync();
  assert.equal(st.synced, true, st.error);
  assert.equal(caddy.loads.length, 1);
  assert.equal(onDemandPolicies(caddy.current()), 1);
});

test('sync: a Caddy that refuses on-demand TLS without an ask endpoint (2.7.3 and later) gets the config without it, from then on', async () => {
  const caddy = fakeCaddy((json) =>
    json.includes('"on_demand":true')
      ? "loading new config: loading http app module: provision http: getting tls app: loading tls app module: provision tls: provisioning automation policy 0: on-demand TLS cannot be enabled without an 'ask' endpoint to prevent abuse"
      : null,
  );
  let current = rows();
  const sync = new ProxySync({
    client: caddy.client,
    rows: async () => current,
    log: createLogger('silent'),
  });
  const st = await sync.sync();
  assert.equal(st.synced, true, st.error);
  assert.equal(st.loads, 1);
  assert.equal(caddy.loads.length, 2, 'refused once, then loaded without on-demand');
  assert.equal(onDemandPolicies(caddy.current()), 0);
  assert.ok(
    caddy.current().apps.tls.certificates.automate.includes('shop.com'),
    'the ACME hosts are still managed',
  );
  // The next change goes straight to the config this Caddy takes.
  current = rows({ domains: current.domains.filter((d) => d.id !== 'D1') });
  const next = await sync.sync();
  assert.equal(next.synced, true, next.error);
  assert.equal(caddy.loads.length, 3);
  assert.ok(!caddy.current().apps.tls.certificates.automate.includes('shop.com'));
});

test('sync: a refusal for any other reason is reported as not synced, and on-demand is kept', async () => {
  let refusing = true;
  const caddy = fakeCaddy(() => (refusing ? 'loading new config: something else entirely' : null));
  const sync = new ProxySync({ client: caddy.client, rows: async () => rows(), log: createLogger('silent') });
  const st = await sync.sync();
  assert.equal(st.synced, false);
  assert.match(st.error ?? '', /something else entirely/);
  assert.equal(caddy.loads.length, 1, 'no second attempt');
  refusing = false;
  assert.equal((await sync.sync()).synced, true);
  assert.equal(onDemandPolicies(caddy.current()), 1);
});

test('cluster mode: a service route resolves its Swarm service tasks in DNS, retrying other tasks', () => {
  const swarm = { ...settings, cluster: 'swarm' as const, wakeToken: undefined };
  const r = rows({ settings: swarm });
  const cfg = buildCaddyConfig(planRoutes(r), swarm, r.certificates);
  const { https, http } = servers(cfg);
  const proxyOf = (routes: Route[], host: string) => byHost(routes, host)[0]!.handle[0]!;
  const shop = proxyOf(https.routes, 'shop.com');
  assert.deepEqual(shop, {
    handler: 'reverse_proxy',
    dynamic_upstreams: { source: 'a', name: 'tasks.svc-shop-web', port: '3000', refresh: '1s' },
    transport: { protocol: 'http', dial_timeout: '1s' },
    load_balancing: {
      selection_policy: { policy: 'round_robin' },
      try_duration: '10s',
      try_interval: '100ms',
    },
  });
  // The domain's port wins over the service's, as on one host; no static upstreams at all.
  const api = proxyOf(http.routes, 'new.shop.com');
  assert.equal(api.dynamic_upstreams.name, 'tasks.svc-shop-api');
  assert.equal(api.dynamic_upstreams.port, '9000');
  assert.equal(api.upstreams, undefined);
  assert.equal(proxyOf(https.routes, 'blog.apps.example.com').dynamic_upstreams.name, 'tasks.svc-blog-web');
  // A preview's hosts carry its label, its tasks its own app name.
  const preview = rows({
    settings: swarm,
    apps: [{ id: 'P', name: 'shop-pr-3', label: 'pr-3-shop', services: [{ name: 'app', port: 80 }] }],
    domains: [],
  });
  const p = servers(buildCaddyConfig(planRoutes(preview), swarm, []));
  assert.equal(
    proxyOf(p.http.routes, 'pr-3-shop.apps.example.com').dynamic_upstreams.name,
    'tasks.svc-shop-pr-3-app',
  );
  // Redirects, the control domain and the 503 of a port-less service are as on one host.
  const single = servers(buildCaddyConfig(planRoutes(rows()), settings, rows().certificates));
  for (const host of ['www.shop.com', 'svc.apps.example.com'])
    assert.deepEqual(byHost(https.routes, host), byHost(single.https.routes, host));
});

test('cluster mode: a sleeping app still goes to the wake route, and the rest of the config is unchanged', () => {
  const swarm = { ...settings, cluster: 'swarm' as const, wakeToken: 'tok' };
  const r = rows({ settings: swarm, apps: rows().apps.map((a) => ({ ...a, sleeping: a.id === 'A2' })) });
  const cfg = buildCaddyConfig(planRoutes(r), swarm, r.certificates);
  const blog = byHost(servers(cfg).https.routes, 'blog.apps.example.com')[0]!.handle[0]!;
  assert.deepEqual(blog.upstreams, [{ dial: '127.0.0.1:9393' }]);
  const one = buildCaddyConfig(planRoutes(rows()), settings, rows().certificates);
  assert.equal(canonicalJson(cfg.tls), canonicalJson(one.tls));
  assert.equal(canonicalJson(cfg.accessLogger), canonicalJson(one.accessLogger));
});
