// Cluster mode's readings: every task of this instance's Swarm services, wherever it runs, with
// the stats agent's numbers for its container (./agent.ts). A task that should run and does not
// counts as unhealthy; a service's failed tasks count as its restarts (Swarm replaces a task
// rather than restarting its container), as far as the swarm's task history reaches.
import type { Engine } from '../docker/engine.js';
import { guard } from '../docker/engine.js';
import { LABEL_APP, LABEL_SERVICE } from '../docker/names.js';
import { isOwned } from '../docker/owner.js';
import type { ContainerReading } from './readings.js';
import type { AgentReadings } from './agent.js';

interface ServiceInfo {
  ID: string;
  Spec?: { Labels?: Record<string, string> };
}

interface TaskInfo {
  ID: string;
  ServiceID: string;
  DesiredState?: string;
  Status?: { State?: string; ContainerStatus?: { ContainerID?: string } };
}

const FAILED = new Set(['failed', 'rejected']);

export async function readSwarm(
  engine: Engine,
  agent: AgentReadings,
  now: () => number,
): Promise<ContainerReading[]> {
  await agent.ensure();
  const [services, tasks] = await guard(engine, () =>
    Promise.all([
      engine.docker.listServices({ filters: { label: [LABEL_APP] } }) as Promise<ServiceInfo[]>,
      engine.docker.listTasks({}) as Promise<TaskInfo[]>,
    ]),
  );
  const ours = new Map<string, { app: string; service: string }>();
  for (const s of services) {
    const l = s.Spec?.Labels;
    if (!isOwned(engine, 'container', `swarm-service:${s.ID}`, l) || !l?.[LABEL_APP] || !l[LABEL_SERVICE])
      continue;
    ours.set(s.ID, { app: l[LABEL_APP], service: l[LABEL_SERVICE] });
  }
  const out: ContainerReading[] = [];
  const failed = new Map<string, number>();
  for (const t of tasks) {
    const owner = ours.get(t.ServiceID);
    if (!owner) continue;
    if (FAILED.has(t.Status?.State ?? '')) failed.set(t.ServiceID, (failed.get(t.ServiceID) ?? 0) + 1);
    if (t.DesiredState !== 'running') continue;
    const cid = t.Status?.ContainerStatus?.ContainerID;
    const running = t.Status?.State === 'running' && !!cid;
    const r = running ? agent.get(cid) : null;
    out.push({
      ...owner,
      container: cid ?? `task:${t.ID}`,
      running,
      health: 'none',
      cpuNs: r?.cpuNs ?? null,
      memoryBytes: r?.memoryBytes ?? null,
      memoryLimitBytes: r?.limitBytes ?? null,
      restartCount: 0,
      at: r?.at ?? now(),
    });
  }
  // One entry per service carries its failed tasks, so an increase is a restart.
  for (const [id, owner] of ours)
    out.push({
      ...owner,
      container: `service:${id}`,
      running: true,
      health: 'none',
      cpuNs: null,
      memoryBytes: null,
      memoryLimitBytes: null,
      restartCount: failed.get(id) ?? 0,
      at: now(),
    });
  return out;
}
