// GET /api/instance/info: what runs, since when, and whether its dependencies answer. Each probe
// has a short budget: an unreachable engine or proxy is reported, never waited on.
import { dialectOf } from '../db/kysely.js';
import { databaseSize } from './store.js';
import type { Services } from '../http/handler.js';
import { productVersion } from '../version.js';
import { getBaseDomain } from '../domains/store.js';
import { createCaddyClient, unixAdminPath } from '../proxy/caddy.js';
import { clusterCounts } from '../cluster/nodes.js';
import { ownRegistryAddress } from '../cluster/registry.js';

const PROBE_MS = 2_000;

function withBudget<T>(p: Promise<T>, fallback: T): Promise<T> {
  return Promise.race([
    p.catch(() => fallback),
    new Promise<T>((r) => setTimeout(() => r(fallback), PROBE_MS).unref()),
  ]);
}

async function proxyProbe(env: Services): Promise<{ reachable: boolean; version: string | null }> {
  if (!env.config.proxy.enabled) return { reachable: false, version: null };
  // Caddy's admin API has no version endpoint; its config endpoint answering is what matters.
  if (unixAdminPath(env.config.proxy.adminUrl))
    return {
      reachable: await createCaddyClient(env.config.proxy.adminUrl, { timeoutMs: PROBE_MS }).reachable(),
      version: null,
    };
  const res = await fetch(`${env.config.proxy.adminUrl}/config/`, { signal: AbortSignal.timeout(PROBE_MS) });
  await res.body?.cancel();
  return { reachable: res.ok, version: res.headers.get('server') };
}

export async function instanceInfo(env: Services) {
  const now = env.now();
  const uptime = process.uptime();
  const [engineVersion, proxy, size, baseDomain, cluster] = await Promise.all([
    withBudget(
      env.engine.docker.version().then((v) => v.Version ?? 'unknown'),
      null as string | null,
    ),
    withBudget(proxyProbe(env), { reachable: false, version: null as string | null }),
    databaseSize(env.db),
    getBaseDomain(env.db, env.config.baseDomain),
    clusterInfo(env),
  ]);
  return {
    version: productVersion(),
    started_at: new Date(now - uptime * 1000).toISOString(),
    uptime_seconds: Math.floor(uptime),
    node_version: process.version,
    engine: { reachable: engineVersion !== null, version: engineVersion },
    proxy,
    database: { dialect: dialectOf(env.db), size_bytes: size },
    base_domain: baseDomain,
    control_domain: env.config.controlDomain ?? (baseDomain ? `svc.${baseDomain}` : null),
    exposure: env.config.exposure,
    features: {
      shell: env.config.enableShell,
      security_agent: env.config.security.agent,
      traffic_monitor: env.monitor !== null,
    },
    cluster,
  };
}

/** Cluster mode's shape: node counts when the manager answers, the registry once there is one. */
async function clusterInfo(
  env: Services,
): Promise<{ mode: 'off' | 'swarm'; nodes?: number; managers?: number; registry?: string | null }> {
  if (env.config.cluster.mode !== 'swarm') return { mode: 'off' };
  const [counts, registry] = await Promise.all([
    withBudget(clusterCounts(env), null),
    env.config.cluster.registry ?? ownRegistryAddress(env).catch(() => null),
  ]);
  return {
    mode: 'swarm',
    ...(counts ? { nodes: counts.nodes, managers: counts.managers } : {}),
    registry,
  };
}
