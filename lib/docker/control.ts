// The control plane's own network. No app ever joins it: app containers are only attached to
// networks labelled with their app (see resources.ts), and this one carries no svc.app label.
import type { Engine } from './engine.js';
import { EngineConflictError, guard, isNotFound } from './engine.js';
import { CONTROL_NETWORK, LABEL_ROLE } from './names.js';
import { ownerLabels } from './owner.js';

export async function ensureControlNetwork(engine: Engine, name = CONTROL_NETWORK): Promise<string> {
  return guard(engine, async () => {
    try {
      const n = await engine.docker.getNetwork(name).inspect();
      if (n.Labels?.[LABEL_ROLE] !== 'control')
        throw new EngineConflictError(`network "${name}" exists but is not the control plane's network`);
      return n.Id as string;
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
    const created = await engine.docker.createNetwork({
      Name: name,
      Driver: 'bridge',
      CheckDuplicate: true,
      Labels: { ...ownerLabels(engine), [LABEL_ROLE]: 'control' },
    });
    return created.id;
  });
}
