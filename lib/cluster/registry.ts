// Where the cluster's images go. A placeholder: the operator's registry (SVC_REGISTRY), or a clear
// error. The control plane's own registry (on a manager, with its own CA) replaces this function.
import type { Services as Env } from '../http/handler.js';
import { StackError } from '../docker/engine.js';

export async function clusterRegistry(env: Pick<Env, 'config'>): Promise<string> {
  const r = env.config.cluster.registry;
  if (!r)
    throw new StackError(
      'cluster mode needs a registry the nodes can pull from: set SVC_REGISTRY to its host[:port]',
    );
  return r;
}
