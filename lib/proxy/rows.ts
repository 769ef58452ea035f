// Reads the rows the edge is a function of. The only I/O on the way to Caddy's config.
import type { Config } from '../config.js';
import type { Db } from '../db/index.js';
import type { Sealer } from '../crypto/seal.js';
import { certificateRows, getBaseDomain, hostCheckRows, listDomainRows, openKey } from '../domains/store.js';
import { appRows } from './store.js';
import {
  effectiveControlDomain,
  type EdgeRows,
  type EdgeSettings,
  type HostState,
  type UploadedCertificate,
} from './config.js';

export interface EdgeContext {
  db: Db;
  config: Config;
  sealer: Sealer;
  now: () => number;
  /** host:port where Caddy reaches the control plane (the listening address once known). */
  controlUpstream: () => string;
  /** The secret of the wake route (lib/proxy/config.ts `WAKE_HEADER`). */
  wakeToken?: string;
  /** One host: where Caddy asks for services' addresses (lib/proxy/resolver.ts), once it listens. */
  resolver?: () => Promise<string | null>;
}

export function edgeSettings(
  config: Config,
  controlUpstream: string,
  wakeToken?: string,
  resolver?: string | null,
): EdgeSettings {
  const p = config.proxy;
  return {
    wakeToken,
    ...(resolver ? { resolver } : {}),
    httpPort: p.httpPort,
    httpsPort: p.httpsPort,
    accessLog: config.accessLog,
    acme: { ca: p.acmeCa, caRoot: p.acmeCaRoot, email: p.acmeEmail },
    controlUpstream,
    ...(config.cluster.mode === 'swarm' ? { cluster: 'swarm' as const } : {}),
  };
}

/** Where Caddy on this host reaches the control plane: loopback unless bound elsewhere. */
export function defaultControlUpstream(config: Config, port = config.port): string {
  const h = config.host;
  const host = h === '0.0.0.0' || h === 'localhost' ? '127.0.0.1' : h === '::' ? '::1' : h;
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

export async function loadEdgeRows(ctx: EdgeContext): Promise<EdgeRows> {
  const { db, config, sealer } = ctx;
  const now = ctx.now();
  const [baseDomain, apps, domains, certs, checks, resolver] = await Promise.all([
    getBaseDomain(db, config.baseDomain),
    appRows(db),
    listDomainRows(db),
    certificateRows(db),
    hostCheckRows(db),
    ctx.resolver?.() ?? null,
  ]);
  const certificates: UploadedCertificate[] = [];
  for (const c of certs) {
    const key = openKey(sealer, c);
    if (key !== null) certificates.push({ domain_id: c.domain_id, cert_pem: c.cert_pem, key_pem: key });
  }
  const hosts = new Map<string, HostState>();
  for (const [h, c] of checks) {
    hosts.set(h, {
      pointsHere: c.dns_points_here === 1,
      certReady:
        c.cert_fingerprint256 !== null && c.cert_not_after !== null && Date.parse(c.cert_not_after) > now,
    });
  }
  return {
    settings: edgeSettings(config, ctx.controlUpstream(), ctx.wakeToken, resolver),
    baseDomain,
    controlDomain: effectiveControlDomain(config.proxy.controlDomain, baseDomain),
    apps,
    domains,
    certificates,
    hosts,
  };
}
