// The edge's parts wired together: the proxy sync (rows -> Caddy), the upstream resolver (rows ->
// the answers Caddy's lookups get, one host only), the host checker (DNS and certificates -> rows),
// the DNS check. Built once per env; started and stopped by the runtime.
import { randomBytes } from 'node:crypto';
import type { Config } from '../config.js';
import type { Db } from '../db/index.js';
import type { Sealer } from '../crypto/seal.js';
import type { Bus } from '../events/bus.js';
import type { Logger } from '../log.js';
import type { Engine } from '../docker/engine.js';
import { createCaddyClient, unixAdminPath, type CaddyClient } from './caddy.js';
import { planRoutes, type EdgeRows, type PlannedRoute } from './config.js';
import { defaultControlUpstream, loadEdgeRows } from './rows.js';
import { ProxySync } from './sync.js';
import { clusterEdgePreparer } from './cluster.js';
import { UpstreamResolver } from './resolver.js';
import { lookupAnswers } from './upstreams-store.js';
import { createDnsChecker, type DnsChecker } from '../domains/dns.js';
import { createCertificateProber } from '../domains/certificate.js';
import { DomainChecker, type CheckTarget } from '../domains/checker.js';
import { certificateRows } from '../domains/store.js';

export interface EdgeDeps {
  db: Db;
  config: Config;
  sealer: Sealer;
  bus: Bus;
  log: Logger;
  now: () => number;
  /** Cluster mode: the manager's engine, where Caddy runs as a container (lib/proxy/cluster.ts). */
  engine?: Engine;
}

export interface EdgeOptions {
  /** Period of the comparison with Caddy's running config (tests shorten it). */
  checkIntervalMs?: number;
  /** Period of the host checker's passes. */
  checkerTickMs?: number;
  issueTimeoutMs?: number;
}

// ctx.env of every handler carries it (the service registry of lib/http/handler.ts).
declare module '../http/handler.js' {
  interface Services {
    /** Caddy sync, host checker, DNS check; started by runtime/background.ts. */
    edge: Edge;
  }
}

export interface Edge {
  readonly proxy: ProxySync;
  readonly checker: DomainChecker;
  /** `GET /api/instance/dns-check`, and the check behind every domain status. */
  readonly dnsCheck: DnsChecker;
  rows(): Promise<EdgeRows>;
  plan(): Promise<{ rows: EdgeRows; routes: PlannedRoute[] }>;
  /**
   * The secret the wake route sends (runtime/wake.ts checks it): derived from the master key, so
   * that Caddy's config stays the same across restarts; without one, new at each start.
   */
  readonly wakeToken: string;
  /** One host with the proxy on: the DNS server Caddy's lookups ask (null in cluster mode or without the proxy). */
  readonly resolver: UpstreamResolver | null;
  /**
   * After the rows of an app's upstreams or sleep changed: the resolver's answers follow, and this
   * resolves once Caddy holds no answer from before (new connections go by the rows), with the
   * time waited for Caddy in ms; null without a resolver.
   */
  publish(appId: string): Promise<number | null>;
  /**
   * Requests Caddy has in flight to any of these container addresses (any port), WebSockets
   * included; null when Caddy cannot be asked (then nothing is open through it either, or it
   * cannot tell).
   */
  inFlight(addresses: ReadonlySet<string>): Promise<number | null>;
  /** Where Caddy reaches the control plane, once the server listens (its port may be chosen then). */
  setControlUpstream(hostPort: string): void;
  start(): void;
  stop(): Promise<void>;
}

/** The address Caddy listens on, as seen from the control plane: the admin endpoint's host (loopback for a unix socket). */
function proxyAddress(adminUrl: string): string {
  if (unixAdminPath(adminUrl)) return '127.0.0.1';
  const h = new URL(adminUrl).hostname.replace(/^\[|\]$/g, '');
  return h === 'localhost' ? '127.0.0.1' : h;
}

export function targetsOf(
  routes: readonly PlannedRoute[],
  certs: ReadonlyArray<{ domain_id: string; issuer: string; not_after: string; fingerprint256: string }>,
): CheckTarget[] {
  const byDomain = new Map(certs.map((c) => [c.domain_id, c]));
  return routes.map((r) => {
    const t = r.target;
    const appId = t.kind === 'service' ? t.appId : t.kind === 'unavailable' ? t.appId : null;
    const service = t.kind === 'service' ? t.service : t.kind === 'unavailable' ? t.service : null;
    const up = r.domainId ? byDomain.get(r.domainId) : undefined;
    return {
      hostname: r.hostname,
      domainId: r.domainId ?? null,
      appId,
      service,
      tls: r.tls,
      uploaded:
        r.tls === 'uploaded' && up
          ? { issuer: up.issuer, not_after: up.not_after, fingerprint256: up.fingerprint256 }
          : null,
    };
  });
}

/**
 * One host with the proxy on: the DNS server Caddy's lookups ask, bound at start before the first
 * sync (its port is in the config). A resolver that cannot bind is logged and its configured
 * address kept: lookups then fail and Caddy hands every app request to the control plane.
 */
function edgeResolver(deps: EdgeDeps) {
  const { config } = deps;
  const resolver =
    config.proxy.enabled && config.cluster.mode !== 'swarm'
      ? new UpstreamResolver({ load: (appId) => lookupAnswers(deps.db, appId), log: deps.log })
      : null;
  let ready: Promise<unknown> | null = null;
  return {
    resolver,
    start() {
      ready ??=
        resolver
          ?.listen(config.proxy.resolverPort)
          .then(() => resolver.reload(null))
          .catch((err) =>
            deps.log.error(
              { err: String(err), port: config.proxy.resolverPort },
              "the upstream resolver could not start: Caddy's lookups fail and every request for an app goes through the control plane",
            ),
          ) ?? null;
    },
    async address(): Promise<string | null> {
      if (!resolver) return null;
      await ready;
      return resolver.address ?? `udp/127.0.0.1:${config.proxy.resolverPort}`;
    },
    async publish(appId: string): Promise<number | null> {
      if (!resolver) return null;
      await ready;
      return resolver.update(appId);
    },
  };
}

/** Edge.inFlight: Caddy's upstream counts for these container addresses. */
async function inFlight(client: CaddyClient, addresses: ReadonlySet<string>): Promise<number | null> {
  try {
    let n = 0;
    for (const [address, count] of await client.upstreams()) {
      const host = address.slice(0, address.lastIndexOf(':')).replace(/^\[|\]$/g, '');
      if (addresses.has(host)) n += count;
    }
    return n;
  } catch {
    return null;
  }
}

/** The host checker (DNS and certificates -> rows) over the routes of the plan. */
function hostChecker(
  deps: EdgeDeps,
  opts: EdgeOptions,
  dns: DnsChecker,
  plan: () => Promise<{ routes: PlannedRoute[] }>,
  onChange: () => void,
): DomainChecker {
  return new DomainChecker({
    db: deps.db,
    bus: deps.bus,
    log: deps.log,
    now: deps.now,
    dns,
    probe: createCertificateProber({
      address: proxyAddress(deps.config.proxy.adminUrl),
      port: deps.config.proxy.httpsPort,
    }),
    targets: async () => targetsOf((await plan()).routes, await certificateRows(deps.db)),
    onChange,
    tickMs: opts.checkerTickMs,
    issueTimeoutMs: opts.issueTimeoutMs,
  });
}

export function createEdge(deps: EdgeDeps, opts: EdgeOptions = {}): Edge {
  const { config } = deps;
  let controlUpstream = defaultControlUpstream(config);
  const wakeToken = deps.sealer.available
    ? deps.sealer.digest('proxy wake route', 'v1')
    : randomBytes(32).toString('base64url');
  const lookups = edgeResolver(deps);
  const resolver = lookups.resolver;
  const rows = () =>
    loadEdgeRows({
      db: deps.db,
      config,
      sealer: deps.sealer,
      now: deps.now,
      controlUpstream: () => controlUpstream,
      wakeToken,
      resolver: lookups.address,
    });
  const client = createCaddyClient(config.proxy.adminUrl);
  // Cluster mode: every run first makes sure Caddy's container runs on the manager, on the
  // networks of the apps in the rows; the first run (at start) creates it.
  const prepareCluster =
    config.cluster.mode === 'swarm' && deps.engine
      ? clusterEdgePreparer({ engine: deps.engine, config, log: deps.log, ready: () => client.reachable() })
      : null;
  const proxy = new ProxySync({
    client,
    prepare: prepareCluster ? (r) => prepareCluster(new Set(r.apps.map((a) => a.name))) : undefined,
    rows,
    log: deps.log,
    now: deps.now,
    checkIntervalMs: opts.checkIntervalMs,
    enabled: config.proxy.enabled,
    // Every sync (start, change, periodic check) re-reads every answer too: a safety net under the
    // per-app updates.
    onPlan: () =>
      void resolver
        ?.reload(null)
        .catch((err) => deps.log.warn({ err: String(err) }, 'upstream answers not re-read')),
  });
  const dnsCheck = createDnsChecker({
    resolver: config.proxy.dnsResolver,
    publicIps: config.proxy.publicIps,
    now: deps.now,
  });
  const plan = async () => {
    const r = await rows();
    return { rows: r, routes: planRoutes(r) };
  };
  const checker = hostChecker(deps, opts, dnsCheck, plan, () => void proxy.sync('host state'));
  return {
    proxy,
    checker,
    dnsCheck,
    wakeToken,
    resolver,
    rows,
    plan,
    inFlight: (addresses) => (config.proxy.enabled ? inFlight(client, addresses) : Promise.resolve(null)),
    publish: lookups.publish,
    setControlUpstream(hostPort) {
      controlUpstream = hostPort;
    },
    start() {
      if (!config.proxy.enabled) return;
      lookups.start();
      proxy.start();
      checker.start();
    },
    async stop() {
      await checker.stop();
      await proxy.stop();
      await resolver?.close();
    },
  };
}
