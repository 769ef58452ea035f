// Wire shapes of the instance: its info, disk usage and pruning, reset, DNS check, base domain
// and proxy state.
import { z } from 'zod';
import { EXPOSURES } from '../config.js';
import { DIALECTS } from '../db/kysely.js';
import { PROXY_HEALTH_STATES } from '../proxy/health.js';
import { named, ts } from './common.js';

export const proxySummarySchema = named(
  'ProxySummary',
  z.object({
    synced: z.boolean(),
    error: z.string().optional().describe('Why the last sync did not apply (the next one retries)'),
  }),
  'Whether the proxy holds the configuration computed from the current rows',
);

export const proxyHealthSchema = named(
  'ProxyHealth',
  z.object({
    state: z.enum(PROXY_HEALTH_STATES),
    detail: z.string().describe('What is wrong and what to do, in one or two sentences'),
  }),
  'Whether the proxy serves the apps: ok, starting, off (SVC_PROXY=off), unreachable or out_of_sync',
);

export const instanceInfoSchema = named(
  'InstanceInfo',
  z.object({
    version: z.string(),
    started_at: ts,
    uptime_seconds: z.number().int(),
    node_version: z.string(),
    engine: z.object({ reachable: z.boolean(), version: z.string().nullable() }),
    proxy: z.object({ reachable: z.boolean(), version: z.string().nullable() }),
    database: z.object({ dialect: z.enum(DIALECTS), size_bytes: z.number() }),
    base_domain: z.string().nullable(),
    control_domain: z.string().nullable(),
    exposure: z.enum(EXPOSURES),
    features: z.object({ shell: z.boolean(), security_agent: z.boolean(), traffic_monitor: z.boolean() }),
    cluster: z
      .object({
        mode: z.enum(['off', 'swarm']),
        nodes: z.number().int().optional().describe('Absent when the manager does not answer'),
        managers: z.number().int().optional(),
        registry: z
          .string()
          .nullable()
          .optional()
          .describe('host:port of the cluster registry; null until the own one is first provisioned'),
      })
      .describe('Cluster mode (docs/cluster.md)'),
  }),
  'Versions, uptime and the engine of this instance',
);

const diskKind = z.object({ count: z.number().int(), size_bytes: z.number(), reclaimable_bytes: z.number() });

export const diskUsageSchema = named(
  'DiskUsage',
  z.object({
    images: diskKind,
    containers: diskKind,
    volumes: diskKind,
    build_cache: diskKind,
    total_bytes: z.number(),
  }),
  'Engine disk usage by kind: images, containers, volumes, build cache',
);

export const pruneResultSchema = named(
  'PruneResult',
  z.object({
    reclaimed_bytes: z.number(),
    images_deleted: z.number().int(),
    containers_deleted: z.number().int(),
    build_cache_bytes: z.number(),
  }),
  "What a prune removed (never an app's images or volumes)",
);

export const resetResultSchema = named(
  'ResetResult',
  z.object({
    removed: z.array(z.object({ id: z.string(), name: z.string() })),
    failed: z.array(z.object({ id: z.string(), name: z.string(), error: z.string() })),
  }),
  'The apps a reset removed, and those it could not',
);

export const dnsCheckSchema = named(
  'DnsCheck',
  z.object({
    host: z.string(),
    expected: z.array(z.string()),
    resolved: z.array(z.string()),
    points_here: z.boolean(),
    error: z.string().optional(),
  }),
  'Where a hostname resolves, against the addresses this host answers on',
);

export const baseDomainSchema = named(
  'BaseDomain',
  z.object({
    base_domain: z.string().nullable(),
    control_domain: z.string().nullable(),
    proxy: proxySummarySchema,
  }),
  'The base domain of the automatic hosts, the control domain that follows from it, and the proxy',
);
