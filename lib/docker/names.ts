// Names are for humans; ownership is decided by labels (this instance's id, see owner.ts) and nothing else.

export const LABEL_MANAGED = 'svc.managed';
export const LABEL_APP = 'svc.app';
export const LABEL_SERVICE = 'svc.service';
export const LABEL_DEPLOYMENT = 'svc.deployment';
export const LABEL_INDEX = 'svc.index';
/** A one-off container (a job run, a one-off command, a release command): the run's id. */
export const LABEL_RUN = 'svc.run';
export const LABEL_VOLUME = 'svc.volume';
export const LABEL_NETWORK = 'svc.network';
/** A managed database's container (lib/databases/), and the app it belongs to. */
export const LABEL_DATABASE = 'svc.database';
export const LABEL_DATABASE_APP = 'svc.database.app';
/** Marks the control plane's own network and container: never joined by an app. */
export const LABEL_ROLE = 'svc.role';
export const CONTROL_NETWORK = 'svc-control';

export const APP_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;

export function assertAppName(app: string): void {
  if (!APP_NAME.test(app)) throw new Error(`invalid app name "${app}"`);
}

export function networkName(app: string, key = 'default'): string {
  return key === 'default' ? `svc-${app}` : `svc-${app}_${key}`;
}

export function volumeName(app: string, key: string): string {
  return `svc-${app}_${key}`;
}

export function containerName(app: string, service: string, index: number): string {
  return `svc-${app}-${service}-${index}`;
}

/** A one-off container of an app: never a service container, never reached by a service's name. */
export function runContainerName(app: string, runId: string): string {
  return `svc-${app}-run-${runId}`;
}

/** A one-off on a swarm (a job service): short, since a Swarm service name has at most 63 characters. */
export function runServiceName(runId: string): string {
  return `svc-run-${runId}`;
}

/**
 * The Swarm service of an app's service (cluster mode). Its tasks resolve as `tasks.<name>` on the
 * app's overlay network: the proxy's upstreams and the health probes use that name.
 */
export function swarmServiceName(app: string, service: string): string {
  return `svc-${app}-${service}`;
}

/** Tag for images the control plane builds: one per deployment, kept for rollback. */
export function imageTag(app: string, service: string, deploymentId: string): string {
  return `svc/${app}-${service}:${deploymentId
    .toLowerCase()
    .replace(/[^a-z0-9_.-]/g, '-')
    .slice(0, 128)}`;
}
