// Image-only apps and Dockerfile-only repositories become a one-service stack named `app`:
// a fixed name keeps the network alias, container names and labels stable whatever the app is called.
import { emptyService, type ComposeModel, type ServiceSpec } from './types.js';

export const SINGLE_SERVICE = 'app';

export function singleServiceModel(
  source: { image: string } | { dockerfile: string; context?: string },
): ComposeModel {
  const spec: ServiceSpec = { ...emptyService(SINGLE_SERVICE), restart: { name: 'unless-stopped' } };
  if ('image' in source) spec.image = source.image;
  else spec.build = { context: source.context ?? '.', dockerfile: source.dockerfile, args: {} };
  return {
    services: { [SINGLE_SERVICE]: spec },
    volumes: {},
    networks: { default: { name: 'default', internal: false, labels: {} } },
  };
}
