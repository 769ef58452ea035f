// The posture checklist's input, read from live state on every request: configuration, the
// agent's snapshot file, the tailer, the engine's published ports, the link-local table (`nft
// list`). Only reads.
import { existsSync } from 'node:fs';
import { metadataFix, metadataState } from '../net/metadata-guard.js';
import type { Services } from '../http/handler.js';
import type { Config } from '../config.js';
import type { Engine } from '../docker/index.js';
import { masterKeyPath } from '../crypto/master-key.js';
import { LABEL_APP, LABEL_SERVICE, guard } from '../docker/index.js';
import { clusterCounts } from '../cluster/nodes.js';
import { evaluatePosture, type PostureInput, type PostureItem } from './posture.js';
import { readOptOut } from './opt-out.js';
import { readHostSnapshot } from './snapshot.js';
import { instanceDomains } from '../proxy/domains.js';
import { getHostCheck } from '../domains/store.js';

const ENGINE_BUDGET_MS = 2000;

async function hostPorts(engine: Engine): Promise<PostureInput['hostPorts']> {
  const list = await guard(engine, () => engine.docker.listContainers({ filters: { label: [LABEL_APP] } }));
  const by = new Map<
    string,
    {
      app: string;
      service: string;
      ports: { host_ip?: string; host_port: number; container_port: number; protocol: string }[];
    }
  >();
  for (const c of list) {
    const published = (c.Ports ?? []).filter((p) => p.PublicPort);
    if (!published.length) continue;
    const app = c.Labels[LABEL_APP]!;
    const service = c.Labels[LABEL_SERVICE] ?? '';
    const key = `${app}/${service}`;
    const entry = by.get(key) ?? by.set(key, { app, service, ports: [] }).get(key)!;
    for (const p of published)
      entry.ports.push({
        host_ip: p.IP,
        host_port: p.PublicPort,
        container_port: p.PrivatePort,
        protocol: p.Type,
      });
  }
  return [...by.values()];
}

function withBudget<T>(p: Promise<T>, ms: number, fallback: T): Promise<T> {
  return Promise.race([
    p.catch(() => fallback),
    new Promise<T>((r) => setTimeout(() => r(fallback), ms).unref()),
  ]);
}

/** What the checklist reads; the running service hands its env, the CLI builds the same from config. */
export interface PostureSources {
  config: Config;
  engine: Engine;
  tailerStatus: PostureInput['tailer'];
  monitorEnabled: boolean;
  now: number;
}

export async function postureInputFrom(src: PostureSources): Promise<PostureInput> {
  const c = src.config;
  const swarm = c.cluster.mode === 'swarm';
  const [snapshot, ports, metadata] = await Promise.all([
    c.security.agent ? readHostSnapshot(c.security.dir) : Promise.resolve(null),
    // An unreachable engine must not make the checklist hang or fail.
    withBudget(hostPorts(src.engine), ENGINE_BUDGET_MS, []),
    metadataState({ allow: c.allowMetadata, cluster: swarm }),
  ]);
  return {
    masterKeySet: c.masterKey !== null,
    masterKeySource: c.masterKeySource ?? undefined,
    masterKeyFile: masterKeyPath(c.dataDir),
    masterKeyFilePresent: existsSync(masterKeyPath(c.dataDir)),
    metricsTokenSet: c.metricsToken !== null,
    exposure: c.exposure,
    baseDomain: c.baseDomain,
    agentEnabled: c.security.agent,
    optedOut: !c.security.expectFirewall || readOptOut(c.dataDir),
    snapshot,
    tailer: src.tailerStatus,
    monitorEnabled: src.monitorEnabled,
    hostPorts: ports,
    notifyAllow: c.notifyAllow ?? [],
    shellEnabled: c.enableShell,
    linkLocal: { ...metadata, fix: metadataFix(metadata, swarm) },
    now: src.now,
  };
}

export async function postureInput(env: Services): Promise<PostureInput> {
  const [input, edge, cluster] = await Promise.all([
    postureInputFrom({
      config: env.config,
      engine: env.engine,
      tailerStatus: env.tailer.status(),
      monitorEnabled: env.monitor !== null,
      now: env.now(),
    }),
    edgePosture(env),
    env.config.cluster.mode === 'swarm'
      ? withBudget(clusterCounts(env), ENGINE_BUDGET_MS, null)
      : Promise.resolve(null),
  ]);
  return { ...input, baseDomain: edge.baseDomain, edge: edge.edge, cluster };
}

/** The base domain in force (the instance setting wins over SVC_BASE_DOMAIN) and what the proxy serves. */
async function edgePosture(
  env: Services,
): Promise<{ baseDomain: string | null; edge: NonNullable<PostureInput['edge']> }> {
  const { base_domain, control_domain } = await instanceDomains(env);
  const st = env.edge.proxy.state();
  const check = control_domain ? await getHostCheck(env.db, control_domain) : null;
  const valid =
    check?.cert_fingerprint256 && check.cert_not_after && Date.parse(check.cert_not_after) > env.now()
      ? check.cert_not_after
      : null;
  return {
    baseDomain: base_domain,
    edge: {
      enabled: env.edge.proxy.enabled,
      synced: st.synced,
      error: st.error,
      controlDomain: control_domain,
      controlCertNotAfter: valid,
    },
  };
}

export async function posture(env: Services): Promise<{ items: PostureItem[] }> {
  return evaluatePosture(await postureInput(env));
}
