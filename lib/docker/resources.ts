// Networks and volumes of an app: created when missing, reused only when they carry our labels.
import type { Engine } from './engine.js';
import { EngineConflictError, guard, isNotFound } from './engine.js';
import { LABEL_APP, LABEL_MANAGED, LABEL_NETWORK, LABEL_VOLUME, appFilter } from './names.js';
import type { StackPlan } from './plan.js';

export async function ensureNetworks(engine: Engine, plan: StackPlan): Promise<void> {
  await guard(engine, async () => {
    for (const n of plan.networks) {
      let existing: { Labels?: Record<string, string> } | undefined;
      try {
        existing = await engine.docker.getNetwork(n.name).inspect();
      } catch (e) {
        if (!isNotFound(e)) throw e;
      }
      if (existing) {
        if (existing.Labels?.[LABEL_APP] !== plan.app || existing.Labels?.[LABEL_NETWORK] !== n.key) {
          throw new EngineConflictError(`network "${n.name}" exists but does not belong to app "${plan.app}"`);
        }
        continue;
      }
      await engine.docker.createNetwork({
        Name: n.name,
        Driver: 'bridge',
        CheckDuplicate: true,
        Internal: n.internal,
        Labels: { ...n.labels, [LABEL_MANAGED]: 'true', [LABEL_APP]: plan.app, [LABEL_NETWORK]: n.key },
      });
    }
  });
}

export async function ensureVolumes(engine: Engine, plan: StackPlan): Promise<void> {
  await guard(engine, async () => {
    for (const v of plan.volumes) {
      let existing: { Labels?: Record<string, string> | null } | undefined;
      try {
        existing = await engine.docker.getVolume(v.name).inspect();
      } catch (e) {
        if (!isNotFound(e)) throw e;
      }
      if (existing) {
        if (existing.Labels?.[LABEL_APP] !== plan.app) throw new EngineConflictError(`volume "${v.name}" exists but does not belong to app "${plan.app}"`);
        continue;
      }
      await engine.docker.createVolume({
        Name: v.name,
        Driver: 'local',
        Labels: { ...v.labels, [LABEL_MANAGED]: 'true', [LABEL_APP]: plan.app, [LABEL_VOLUME]: v.key },
      });
    }
  });
}

export async function listAppNetworks(engine: Engine, app: string): Promise<{ id: string; name: string }[]> {
  return guard(engine, async () => {
    const nets = await engine.docker.listNetworks({ filters: appFilter(app) });
    return nets.filter((n) => n.Labels?.[LABEL_APP] === app).map((n) => ({ id: n.Id, name: n.Name }));
  });
}

export async function listAppVolumes(engine: Engine, app: string): Promise<string[]> {
  return guard(engine, async () => {
    const { Volumes } = await engine.docker.listVolumes({ filters: appFilter(app) });
    return (Volumes ?? []).filter((v) => v.Labels?.[LABEL_APP] === app).map((v) => v.Name).sort();
  });
}
