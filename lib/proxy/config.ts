// Caddy's configuration as a pure function of rows.
//
// Design note. The control plane owns Caddy's `apps.http`, `apps.tls` and one access logger;
// everything else in Caddy's config (admin, storage, other loggers, other apps) is kept as found.
// `planRoutes` turns rows (domains, uploaded certificates, automatic hosts from the base domain,
// the control domain, what the checker saw of each host; never container addresses) into one route per
// hostname; `buildCaddyConfig` turns routes into Caddy JSON. Nothing here does I/O, so the whole
// edge can be unit-tested without Caddy, and the same plan feeds request attribution.
//
// Caddy's automatic HTTPS is disabled on both servers and its effects are written out instead,
// because they depend on facts Caddy cannot know:
// - certificates: a host goes to the CA (`tls.certificates.automate`) only once its DNS points
//   here; a host awaiting DNS is not in the automation list at all, so the CA is not hammered
//   with challenges that must fail. Uploaded certificates (`load_pem`) replace ACME for their host,
//   and only for it: a certificate naming other hosts too is never served for them
//   (`connectionPolicies`).
//   The ACME hosts share one automation policy naming exactly them, with `on_demand`: see
//   "Caddy's reloads" below for why. Caddy may obtain on demand only for the policy's names, so
//   its "no protections are in place" warning about on-demand TLS does not apply. No on-demand
//   rate limit is set: Caddy 2.6.2 panics on any later load that drops one (its limiter refuses
//   a burst of 0 while the old interval is still set), so the operator could not load a config
//   of their own without restarting Caddy.
// - HTTP: ACME HTTP-01 challenges are answered by Caddy before any route runs (its HTTP-01
//   handler sees every plain-HTTP request), so the routes only decide the rest: a host whose
//   certificate is served redirects to HTTPS (308); a host without one yet is served over plain
//   HTTP, since redirecting it would only show a certificate error; redirect domains answer 308
//   to https://<redirect_to><uri> on both ports.
// - HTTPS: one server with TLS for every host that has or is getting a certificate; strict SNI
//   so a connection made for one name cannot be used for another; h1 and h2 only (no UDP).
// - the control domain's route goes to the control plane, which answers 403 to clients on the
//   engine's app networks (containers reach the host's proxy port like anyone else) by the
//   X-Forwarded-For Caddy sets (runtime/server.ts).
// The route that serves a host's content carries the contract's `@id` (`svc-route-<domainId>`,
// `svc-auto-<appId>-<service>`, `svc-control`); its plain-HTTP companion adds `-http`.
//
// Upstreams without reloads (one host). A service's route names its containers, not their
// addresses: Caddy looks `<port>.<service>.<app id>.svc.internal.` up (`dynamic_upstreams`,
// source `a`) at the control plane's own DNS server on loopback (lib/proxy/resolver.ts), caches
// the answer for LOOKUP_REFRESH_MS and dials the addresses on the route's port; the containers sit
// on the app's bridge network, which Caddy on the host reaches without any port published. A
// deploy, a rollback, a restart, sleeping and waking change that answer, never this config, so
// they load nothing: only a host, a certificate or a route (its port included) does. That matters
// because Caddy 2.6 restarts its servers on every load, which closes every WebSocket open through
// it (code 1001), whichever app the load was for.
// When the lookup fails (the app sleeps or has no container: NXDOMAIN; or the control plane is
// restarting: no answer), Caddy 2.6 falls back to the handler's static upstreams, which is the
// control plane: its wake path (runtime/wake.ts) wakes a sleeping app and answers with the app's
// own answer, or answers 503 at once for a stopped one. While the control plane restarts, that
// dial fails too and is retried like any failed dial (`try_duration`), so a short restart delays
// requests instead of failing them. The wake header carries the wake secret; it is set on every
// attempt with the chosen upstream in front, and two replacements keep the secret only when that
// upstream is the control plane: an app container gets the header empty.
//
// Cluster mode (SVC_CLUSTER=swarm). Caddy runs in a container on a manager, attached to the apps'
// overlay networks (lib/proxy/cluster.ts), and a service's route names its Swarm service instead:
// Caddy resolves `tasks.<service>` in the engine's own DNS (same `a` source), so deploys and
// rescheduled tasks need no load either; sleeping there still swaps the route for the wake route.
//
// Caddy's loads (hosts, certificates, routes), and what they cost. Caddy 2.6 restarts every app on
// any admin-API change. Each HTTP server then opens its own listening socket on the port
// (SO_REUSEPORT) and the old server closes its socket and its idle kept-alive connections;
// requests in flight finish (`grace_period`), WebSockets are closed.
// - Certificates across a load: 2.6 gives each loaded TLS app a new, empty certificate cache,
//   filled from storage when that app starts; apps start in no fixed order, so the new HTTPS
//   server may accept connections before its TLS app has loaded anything, and such a handshake
//   failed with "no certificate available" (TLS alert 80, seen by clients as an internal error;
//   no client retries that). With `on_demand` on the ACME hosts' policy, a handshake that finds
//   the cache empty loads the host's certificate from storage itself, so there is no window.
//   Obtaining still happens only for the policy's names; the checker's probes load each host
//   after a load, so renewals keep running from the cache. Measured with `npm run
//   bench:edge-reload`: 6-14 failed handshakes per 200 loads with one plain policy, none now.
// - Two races remain, both on requests that got no byte of answer and were never processed: a
//   client sending on an idle kept-alive connection as the old server closes it, and a
//   connection the kernel had queued on the old socket (reset when it closes; Linux hands those
//   to the new socket with `net.ipv4.tcp_migrate_req=1`, which CI sets). Clients retry exactly
//   those for idempotent requests (RFC 9112, 9.3.1: browsers, curl and Go do).
// - `shutdown_delay` applies only when a listener closes for good, never on a load;
//   `stream_close_delay` (which only delays the WebSocket close) is 2.7's. Caddy 2.7 keeps its
//   certificate cache across loads, and 2.7.3 refuses on-demand TLS without an `ask` endpoint:
//   when Caddy refuses the on-demand policy, the sync loads the config without it from then on
//   (lib/proxy/sync.ts).

import { createHash, X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
import { isLabel, MAX_HOSTNAME } from '../util/hostname.js';
import { swarmServiceName } from '../docker/names.js';
import { LOOKUP_REFRESH_MS, lookupName } from './lookup-names.js';

export const ACCESS_LOGGER = 'svc';
/** Caddy names a server's access logger `http.log.access.<default_logger_name>`. */
export const ACCESS_LOGGER_NAMESPACE = `http.log.access.${ACCESS_LOGGER}`;
export const ACCESS_LOG_KEY = 'svc_access';
/**
 * Invitation and reset links carry their single-use token in the path (the dashboard's
 * `/invite/<token>` and the API's `/api/invitations/<token>`): the access log keeps the path with
 * the token cut out, so a reader of the log cannot redeem a link that is still open.
 */
export const LINK_TOKEN_IN_PATH = '(/(?:api/invitations|invite)/)[^/?#]+';
export const HTTP_SERVER = 'svc_http';
export const HTTPS_SERVER = 'svc_https';
export const CONTROL_ROUTE_ID = 'svc-control';

export interface EdgeSettings {
  httpPort: number;
  httpsPort: number;
  accessLog: string;
  acme: { ca: string; caRoot: string | null; email: string | null };
  /** host:port of the control plane, for the control domain's route. */
  controlUpstream: string;
  /**
   * The secret Caddy sends with the requests it hands to the control plane for an app (the
   * `X-Svc-Wake` header: the app sleeps, or has no container), so that the control plane knows
   * them from anyone else's. Without it, such requests are answered 503 by Caddy itself.
   */
  wakeToken?: string;
  /**
   * One host: the control plane's DNS server for service lookups, in Caddy's syntax
   * (`udp/127.0.0.1:<port>`, lib/proxy/resolver.ts).
   */
  resolver?: string;
  /**
   * `swarm` (SVC_CLUSTER): apps run as Swarm services and Caddy runs in a container on their
   * overlay networks, so a service's route resolves its tasks itself (see "Cluster mode" above);
   * the upstream rows are not read.
   */
  cluster?: 'swarm';
}

/** The header the wake route sets (replacing whatever a client sent): `<token> <appId> <service> <port>`. */
export const WAKE_HEADER = 'X-Svc-Wake';

export interface AppRow {
  id: string;
  name: string;
  /** In a stable order: the first one with a port gets `<app>.<base>`. */
  services: Array<{ name: string; port: number | null }>;
  /**
   * Asleep (lib/sleep): in cluster mode its hosts go to the wake route. On one host this changes no
   * route: the resolver stops answering for the app, and the lookup's fallback is the wake path.
   */
  sleeping?: boolean;
  /** The label of its hosts instead of its name: a preview's `pr-<n>-<app>`. */
  label?: string;
}

export interface DomainRow {
  id: string;
  hostname: string;
  app_id: string | null;
  service: string | null;
  port: number | null;
  redirect_to: string | null;
}

export interface UploadedCertificate {
  domain_id: string;
  cert_pem: string;
  key_pem: string;
}

export interface UpstreamRow {
  app_id: string;
  service: string;
  /** Container addresses (IPs): what the resolver answers for the service, and where the wake path forwards. */
  addresses: string[];
}

/** What the checker saw of a host. */
export interface HostState {
  pointsHere: boolean;
  /** A valid certificate for the host is being served. */
  certReady: boolean;
}

export interface EdgeRows {
  settings: EdgeSettings;
  baseDomain: string | null;
  controlDomain: string | null;
  apps: AppRow[];
  domains: DomainRow[];
  certificates: UploadedCertificate[];
  hosts: ReadonlyMap<string, HostState>;
}

export type RouteTarget =
  | {
      kind: 'service';
      appId: string;
      service: string;
      port: number;
      /** One host: the name looked up at `resolver` for the service's containers (lookup-names.ts). */
      lookup?: { name: string; resolver: string };
      /**
       * Where requests go when the lookup finds nothing: the control plane (`dial`) with the wake
       * header's value (`<token> <appId> <service> <port>`). Cluster mode: the app sleeps, and
       * every request goes there.
       */
      wake?: { dial: string; header: string };
      /** Cluster mode: the Swarm service whose tasks (`tasks.<name>` in DNS) serve the route. */
      tasks?: string;
    }
  /**
   * The control plane. Clients on the engine's app networks are refused by the control plane itself
   * (X-Forwarded-For, which Caddy sets to the connection's peer, against its live subnet list:
   * runtime/server.ts), not here: networks come and go with apps, previews and databases, and each
   * change would load a config, closing every WebSocket through Caddy.
   */
  | { kind: 'control'; dial: string[] }
  | { kind: 'redirect'; to: string }
  /** Assigned to a service with no port (or no app): answered 503 until that is fixed. */
  | { kind: 'unavailable'; appId: string | null; service: string | null; reason: string };

export interface PlannedRoute {
  id: string;
  hostname: string;
  source: 'control' | 'domain' | 'auto';
  domainId?: string;
  target: RouteTarget;
  /** 'acme': handed to the CA; 'uploaded': an uploaded certificate; 'none': awaiting DNS. */
  tls: 'acme' | 'uploaded' | 'none';
  certReady: boolean;
}

export interface AutomaticHost {
  appId: string;
  service: string;
  hostname: string;
  port: number;
}

/**
 * `<app>.<base>` for the app's first service with a port, `<service>.<app>.<base>` for each
 * further one (a preview's `pr-<n>-<app>` stands for `<app>`). Names that would not make a valid DNS label are left out rather than mangled.
 */
export function automaticHosts(baseDomain: string | null, apps: readonly AppRow[]): AutomaticHost[] {
  if (!baseDomain) return [];
  const out: AutomaticHost[] = [];
  for (const app of apps) {
    const label = app.label ?? app.name;
    if (!isLabel(label)) continue;
    let first = true;
    for (const s of app.services) {
      if (s.port === null) continue;
      const isFirst = first;
      first = false;
      if (!isFirst && !isLabel(s.name)) continue;
      const hostname = isFirst ? `${label}.${baseDomain}` : `${s.name}.${label}.${baseDomain}`;
      if (hostname.length > MAX_HOSTNAME) continue;
      out.push({ appId: app.id, service: s.name, hostname, port: s.port });
    }
  }
  return out;
}

/** The control domain in force: SVC_CONTROL_DOMAIN, else `svc.<base>`. */
export function effectiveControlDomain(explicit: string | null, baseDomain: string | null): string | null {
  return explicit ?? (baseDomain ? `svc.${baseDomain}` : null);
}

export function dialAddress(host: string, port: number): string {
  return isIP(host) === 6 ? `[${host}]:${port}` : `${host}:${port}`;
}

function tlsMode(
  hostname: string,
  uploaded: boolean,
  hosts: ReadonlyMap<string, HostState>,
): PlannedRoute['tls'] {
  if (uploaded) return 'uploaded';
  return hosts.get(hostname)?.pointsHere ? 'acme' : 'none';
}

/**
 * One route per hostname, listed control domain, domains, automatic hosts. Where two claim a
 * hostname the control domain wins, then the automatic host: a custom domain never shadows one.
 */
export function planRoutes(rows: EdgeRows): PlannedRoute[] {
  const taken = new Set<string>();
  const routes: PlannedRoute[] = [];
  const apps = new Map(rows.apps.map((a) => [a.id, a]));
  const uploaded = new Set(rows.certificates.map((c) => c.domain_id));
  const ready = (h: string, up: boolean) => up || (rows.hosts.get(h)?.certReady ?? false);

  if (rows.controlDomain) {
    const h = rows.controlDomain;
    taken.add(h);
    const tls = tlsMode(h, false, rows.hosts);
    routes.push({
      id: CONTROL_ROUTE_ID,
      hostname: h,
      source: 'control',
      target: {
        kind: 'control',
        dial: [rows.settings.controlUpstream],
      },
      tls,
      certReady: tls !== 'none' && ready(h, false),
    });
  }

  const serviceTarget = (appId: string | null, service: string | null, port: number | null): RouteTarget => {
    const app = appId ? apps.get(appId) : undefined;
    if (!app || !service)
      return { kind: 'unavailable', appId, service, reason: 'the domain is not assigned to an app service' };
    const svc = app.services.find((s) => s.name === service);
    const p = port ?? svc?.port ?? null;
    if (p === null)
      return { kind: 'unavailable', appId, service, reason: `service "${service}" has no port` };
    const token = rows.settings.wakeToken;
    const base = { kind: 'service' as const, appId: app.id, service, port: p };
    const wake = token
      ? { dial: rows.settings.controlUpstream, header: `${token} ${app.id} ${service} ${p}` }
      : undefined;
    if (rows.settings.cluster === 'swarm') {
      if (app.sleeping && wake) return { ...base, wake };
      return { ...base, tasks: swarmServiceName(app.name, service) };
    }
    const resolver = rows.settings.resolver;
    if (!resolver)
      return { kind: 'unavailable', appId, service, reason: 'the upstream resolver is not running' };
    return { ...base, lookup: { name: lookupName(app.id, service, p), resolver }, ...(wake ? { wake } : {}) };
  };

  // A custom domain never shadows an automatic host (lib/proxy/reserved.ts): the app's own wins.
  const automatic = automaticHosts(rows.baseDomain, rows.apps);
  for (const a of automatic) if (a.hostname !== rows.controlDomain) taken.add(a.hostname);
  for (const d of [...rows.domains].sort((a, b) => (a.hostname < b.hostname ? -1 : 1))) {
    if (taken.has(d.hostname)) continue;
    // Unassigned domains are not served at all: nothing to route, no certificate to get.
    if (d.redirect_to === null && d.app_id === null) continue;
    taken.add(d.hostname);
    const up = uploaded.has(d.id);
    const target: RouteTarget =
      d.redirect_to !== null
        ? { kind: 'redirect', to: d.redirect_to }
        : serviceTarget(d.app_id, d.service, d.port);
    const tls = tlsMode(d.hostname, up, rows.hosts);
    routes.push({
      id: `svc-route-${d.id}`,
      hostname: d.hostname,
      source: 'domain',
      domainId: d.id,
      target,
      tls,
      certReady: tls !== 'none' && ready(d.hostname, up),
    });
  }

  const routed = new Set<string>();
  for (const a of automatic) {
    if (a.hostname === rows.controlDomain || routed.has(a.hostname)) continue;
    routed.add(a.hostname);
    const tls = tlsMode(a.hostname, false, rows.hosts);
    routes.push({
      id: `svc-auto-${a.appId}-${a.service}`,
      hostname: a.hostname,
      source: 'auto',
      target: serviceTarget(a.appId, a.service, a.port),
      tls,
      certReady: tls !== 'none' && ready(a.hostname, false),
    });
  }
  return routes;
}

type Json = Record<string, unknown>;

function contentHandlers(target: RouteTarget): Json[] {
  switch (target.kind) {
    case 'redirect':
      return [
        {
          handler: 'static_response',
          status_code: 308,
          headers: { Location: [`https://${target.to}{http.request.uri}`] },
        },
      ];
    case 'service':
      if (target.lookup) return lookupHandlers(target.lookup, target.port, target.wake);
      if (target.tasks) return taskHandlers(target.tasks, target.port);
      if (target.wake) return wakeHandlers(target.wake);
      return unavailable('This service has no running container right now.');
    case 'control':
      return [
        {
          handler: 'reverse_proxy',
          upstreams: target.dial.map((dial) => ({ dial })),
          load_balancing: {
            selection_policy: { policy: 'round_robin' },
            try_duration: '5s',
            try_interval: '250ms',
          },
        },
      ];
    case 'unavailable':
      return unavailable('This domain has no service to serve it.');
  }
}

/**
 * One host: the service's containers as the control plane's resolver names them now (see
 * "Upstreams without reloads" above). A dial that fails (a container restarting, the control
 * plane restarting while the lookup falls back to it) is retried for a moment instead of answering
 * 502 at once; each try looks up again. Without the wake secret there is no fallback, and a failed
 * lookup is Caddy's own 503.
 */
function lookupHandlers(
  lookup: { name: string; resolver: string },
  port: number,
  wake: { dial: string; header: string } | undefined,
): Json[] {
  const handler: Json = {
    handler: 'reverse_proxy',
    dynamic_upstreams: {
      source: 'a',
      name: lookup.name,
      port: String(port),
      refresh: `${LOOKUP_REFRESH_MS}ms`,
      resolver: { addresses: [lookup.resolver] },
      dial_timeout: '1s',
    },
    load_balancing: {
      selection_policy: { policy: 'round_robin' },
      try_duration: '5s',
      try_interval: '250ms',
    },
  };
  if (wake) {
    handler.upstreams = [{ dial: wake.dial }];
    // Set on each try after the upstream is chosen, so `{...upstream.hostport}` is that try's dial.
    // The first replacement leaves the secret alone when it goes to the control plane; the second
    // empties every other value (an app container's).
    handler.headers = {
      request: {
        set: { [WAKE_HEADER]: [`{http.reverse_proxy.upstream.hostport}|${wake.header}`] },
        replace: {
          [WAKE_HEADER]: [
            { search: `${wake.dial}|`, replace: '' },
            { search_regexp: '^.*\\|.*$', replace: '' },
          ],
        },
      },
    };
  }
  return [handler];
}

/**
 * Cluster mode: Caddy looks the service's tasks up in the engine's DNS on the overlay network (every
 * second at most, cached in between), so a deploy or a rescheduled task needs no load of the config.
 * That DNS can name a task that has just gone (or sits on a node that died): a short dial timeout
 * and retries over the other addresses keep such a request from failing. A GET is retried on any
 * error before the first byte of the answer, other methods only when the dial failed.
 */
function taskHandlers(tasks: string, port: number): Json[] {
  return [
    {
      handler: 'reverse_proxy',
      dynamic_upstreams: { source: 'a', name: `tasks.${tasks}`, port: String(port), refresh: '1s' },
      transport: { protocol: 'http', dial_timeout: '1s' },
      load_balancing: {
        selection_policy: { policy: 'round_robin' },
        try_duration: '10s',
        try_interval: '100ms',
      },
    },
  ];
}

/**
 * Cluster mode, a sleeping app's host: the request goes to the control plane, which wakes the app and answers it
 * with the app's own answer. The header is set here, replacing any value a client sent, and carries
 * the secret that tells the control plane the request came through this route (runtime/wake.ts).
 */
function wakeHandlers(wake: { dial: string; header: string }): Json[] {
  return [
    {
      handler: 'reverse_proxy',
      upstreams: [{ dial: wake.dial }],
      headers: { request: { set: { [WAKE_HEADER]: [wake.header] } } },
    },
  ];
}

function unavailable(body: string): Json[] {
  return [
    {
      handler: 'static_response',
      status_code: 503,
      headers: { 'Content-Type': ['text/plain; charset=utf-8'], 'Retry-After': ['10'] },
      body: `${body}\n`,
    },
  ];
}

function toHttpsHandlers(httpsPort: number): Json[] {
  const port = httpsPort === 443 ? '' : `:${httpsPort}`;
  return [
    {
      handler: 'static_response',
      status_code: 308,
      headers: { Location: [`https://{http.request.host}${port}{http.request.uri}`] },
    },
  ];
}

const notFound: Json = {
  handle: [
    {
      handler: 'static_response',
      status_code: 404,
      headers: { 'Content-Type': ['text/plain; charset=utf-8'] },
      body: 'No site is configured for this host.\n',
    },
  ],
  terminal: true,
};

/**
 * The tag a loaded certificate carries: a digest of its chain. Caddy caches one copy of a chain
 * (the first one loaded, with that entry's tags), so two domains given the same certificate must
 * share the tag that selects it.
 */
export function certificateTag(certPem: string): string {
  const h = createHash('sha256');
  for (const m of certPem.matchAll(/-----BEGIN CERTIFICATE-----([\s\S]*?)-----END CERTIFICATE-----/g))
    h.update(Buffer.from(m[1]!.replace(/\s+/g, ''), 'base64'));
  return `svc-cert-${h.digest('hex').slice(0, 32)}`;
}

/** Carried by no certificate: a policy selecting it never takes one from Caddy's cache. */
export const NO_CACHED_CERTIFICATE = 'svc-none';

/**
 * The names Caddy's certificate cache files a certificate under (certmagic: the leaf's subject CN
 * and DNS names, lower-cased); null when the PEM cannot be read, taken as "could cover anything".
 */
export function certificateNames(certPem: string): string[] | null {
  try {
    const leaf = new X509Certificate(certPem);
    const names: string[] = [];
    const cn = /^CN=(.*)$/m.exec(leaf.subject)?.[1];
    if (cn) names.push(cn);
    // Node quotes (as JSON) a name holding a comma or a quote.
    for (const m of (leaf.subjectAltName ?? '').matchAll(/DNS:("(?:[^"\\]|\\.)*"|[^,]*)/g)) {
      const v = m[1]!;
      names.push(v.startsWith('"') ? (JSON.parse(v) as string) : v);
    }
    return names.map((n) => n.toLowerCase());
  } catch {
    return null;
  }
}

/** Whether a certificate name could answer for `host` in Caddy's cache: equal, or a wildcard per label. */
function nameCovers(name: string, host: string): boolean {
  if (name === host) return true;
  if (!name.includes('*')) return false;
  const a = name.split('.');
  const b = host.split('.');
  return a.length === b.length && a.every((l, i) => l === '*' || l === b[i]);
}

/**
 * Which certificate a handshake may get. Caddy 2.6 keeps one certificate cache for the whole TLS
 * app and, for a policy without `certificate_selection`, serves the first valid certificate filed
 * under the SNI name, uploaded or not; an uploaded certificate that also names the control domain
 * or another app's host would be served for them (load order puts it first). So:
 * - each uploaded domain has a policy for its own SNI that selects its certificate by tag;
 * - ACME hosts that no uploaded certificate names keep the plain policy (served from the cache);
 * - everything else (an ACME host some uploaded certificate names, unknown names, no SNI) gets a
 *   policy selecting a tag no certificate carries, so nothing is taken from the cache. Selection
 *   is by tags only (2.6 cannot exclude one, and ACME certificates carry none); such an ACME host
 *   is then loaded from storage at each handshake through its on-demand policy (its own ACME
 *   certificate, never an uploaded one), and any other name gets no certificate at all. Without
 *   on-demand (Caddy 2.7.3 and later, see sync.ts) such a host fails its handshakes rather than
 *   showing someone else's certificate.
 * Browsers may reuse a connection for another host its certificate names; strict SNI answers such
 * a request 421, which makes them open a connection of its own.
 */
function connectionPolicies(
  routes: readonly PlannedRoute[],
  pems: readonly UploadedCertificate[],
  automate: readonly string[],
): Json[] {
  const byDomain = new Map(pems.map((c) => [c.domain_id, c]));
  const policies: Json[] = [];
  for (const r of routes) {
    const c = r.tls === 'uploaded' && r.domainId ? byDomain.get(r.domainId) : undefined;
    if (c)
      policies.push({
        match: { sni: [r.hostname] },
        certificate_selection: { any_tag: [certificateTag(c.cert_pem)] },
      });
  }
  const named = pems.map((c) => certificateNames(c.cert_pem));
  const open = [...automate]
    .sort()
    .filter((h) => !named.some((names) => names === null || names.some((n) => nameCovers(n, h))));
  if (open.length) policies.push({ match: { sni: open } });
  policies.push({ certificate_selection: { any_tag: [NO_CACHED_CERTIFICATE] } });
  return policies;
}

export interface OwnedConfig {
  http: Json;
  tls: Json;
  accessLogger: Json;
}

export interface BuildOptions {
  /**
   * The ACME hosts' policy loads certificates on demand (default). Off for a Caddy that refuses
   * on-demand TLS without an `ask` endpoint (2.7.3 and later); those keep their certificate cache
   * across reloads, so they do not need it.
   */
  onDemand?: boolean;
}

/** Caddy's `apps.http`, `apps.tls` and the access logger for the planned routes. */
export function buildCaddyConfig(
  routes: readonly PlannedRoute[],
  settings: EdgeSettings,
  certificates: readonly UploadedCertificate[],
  opts: BuildOptions = {},
): OwnedConfig {
  const httpRoutes: Json[] = [];
  const httpsRoutes: Json[] = [];
  const automate: string[] = [];
  for (const r of routes) {
    const match = [{ host: [r.hostname] }];
    const content = contentHandlers(r.target);
    if (r.tls === 'none') {
      httpRoutes.push({ '@id': r.id, match, handle: content, terminal: true });
      continue;
    }
    if (r.tls === 'acme') automate.push(r.hostname);
    httpsRoutes.push({ '@id': r.id, match, handle: content, terminal: true });
    const plain =
      r.target.kind === 'redirect' ? content : r.certReady ? toHttpsHandlers(settings.httpsPort) : content;
    httpRoutes.push({ '@id': `${r.id}-http`, match, handle: plain, terminal: true });
  }
  const loaded = new Set(routes.filter((r) => r.tls === 'uploaded').map((r) => r.domainId));
  const pems = certificates.filter((c) => loaded.has(c.domain_id));
  const servers = {
    [HTTP_SERVER]: {
      listen: [`:${settings.httpPort}`],
      routes: [...httpRoutes, notFound],
      automatic_https: { disable: true },
      logs: { default_logger_name: ACCESS_LOGGER },
    },
    [HTTPS_SERVER]: {
      listen: [`:${settings.httpsPort}`],
      routes: [...httpsRoutes, notFound],
      tls_connection_policies: connectionPolicies(routes, pems, automate),
      automatic_https: { disable: true },
      strict_sni_host: true,
      protocols: ['h1', 'h2'],
      logs: { default_logger_name: ACCESS_LOGGER },
    },
  };
  const http: Json = {
    http_port: settings.httpPort,
    https_port: settings.httpsPort,
    // Requests still running on the previous config get this long to finish after a reload.
    grace_period: '60s',
    servers,
  };

  const issuer: Json = {
    module: 'acme',
    ca: settings.acme.ca,
    challenges: { http: { alternate_port: settings.httpPort }, 'tls-alpn': { disabled: true } },
  };
  if (settings.acme.email) issuer.email = settings.acme.email;
  if (settings.acme.caRoot) issuer.trusted_roots_pem_files = [settings.acme.caRoot];
  const certs: Json = {};
  if (automate.length) certs.automate = [...automate].sort();
  if (pems.length)
    certs.load_pem = pems.map((c) => ({
      certificate: c.cert_pem,
      key: c.key_pem,
      tags: [certificateTag(c.cert_pem)],
    }));
  const policies: Json[] = [];
  if (automate.length && opts.onDemand !== false)
    policies.push({ subjects: [...automate].sort(), issuers: [issuer], on_demand: true });
  policies.push({ issuers: [issuer] });
  const tls: Json = { automation: { policies } };
  if (Object.keys(certs).length) tls.certificates = certs;

  const accessLogger: Json = {
    writer: { output: 'file', filename: settings.accessLog },
    // Request and response headers carry cookies and bearer tokens: they never reach the file.
    encoder: {
      format: 'filter',
      wrap: { format: 'json' },
      fields: {
        'request>headers': { filter: 'delete' },
        'request>tls': { filter: 'delete' },
        'request>uri': { filter: 'regexp', regexp: LINK_TOKEN_IN_PATH, value: '${1}[redacted]' },
        resp_headers: { filter: 'delete' },
      },
    },
    include: [ACCESS_LOGGER_NAMESPACE],
  };
  return { http, tls, accessLogger };
}

function isObject(v: unknown): v is Json {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * The whole config to load: what Caddy has now with the owned parts replaced. The admin
 * endpoint keeps its settings; without any, it is pinned to the address the control plane
 * uses, since a config without `admin` would move it back to Caddy's default. A control plane
 * on a unix socket also pins a TCP listen back to the socket: the config is autosaved, and one
 * resumed with the endpoint on TCP would open it to every local process again.
 */
export function withOwned(current: unknown, owned: OwnedConfig, adminListen: string): Json {
  const base: Json = isObject(current) ? structuredClone(current) : {};
  const admin: Json = isObject(base.admin) ? base.admin : {};
  const onSocket = adminListen.startsWith('unix/');
  if (
    typeof admin.listen !== 'string' ||
    admin.listen === '' ||
    (onSocket && !admin.listen.startsWith('unix/'))
  )
    admin.listen = adminListen;
  base.admin = admin;
  const apps: Json = isObject(base.apps) ? base.apps : {};
  apps.http = owned.http;
  apps.tls = owned.tls;
  base.apps = apps;
  const logging: Json = isObject(base.logging) ? base.logging : {};
  const logs: Json = isObject(logging.logs) ? logging.logs : {};
  logs[ACCESS_LOG_KEY] = owned.accessLogger;
  // Without this the default logger would print every access line to Caddy's own log too.
  const def: Json = isObject(logs.default) ? logs.default : {};
  const exclude = Array.isArray(def.exclude)
    ? def.exclude.filter((x): x is string => typeof x === 'string')
    : [];
  if (!exclude.includes(ACCESS_LOGGER_NAMESPACE)) def.exclude = [...exclude, ACCESS_LOGGER_NAMESPACE];
  logs.default = def;
  logging.logs = logs;
  base.logging = logging;
  return base;
}

/** JSON with object keys sorted: Caddy hands back what it was given, but not in our key order. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (isObject(v)) {
    const keys = Object.keys(v)
      .filter((k) => v[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(v[k])}`).join(',')}}`;
  }
  return JSON.stringify(v ?? null);
}

/** Request attribution: hostname -> (app, service), from the same plan Caddy serves. */
export function hostAttribution(
  routes: readonly PlannedRoute[],
): Map<string, { appId: string; service: string }> {
  const map = new Map<string, { appId: string; service: string }>();
  for (const r of routes) {
    const t = r.target;
    if (t.kind === 'service') map.set(r.hostname, { appId: t.appId, service: t.service });
    else if (t.kind === 'unavailable' && t.appId && t.service)
      map.set(r.hostname, { appId: t.appId, service: t.service });
  }
  return map;
}
