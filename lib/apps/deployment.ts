// The deployment resource as the API shows it, and the state machine's vocabulary. It lives with
// the app it belongs to so that apps/ can name a deployment's states; the machinery is in lib/deploy/.
import type { DeploymentTable } from '../db/schema.js';

export const ACTIVE = ['queued', 'cloning', 'building', 'deploying', 'health_checking'] as const;
export const TERMINAL = ['succeeded', 'failed', 'canceled', 'interrupted'] as const;
export type ActiveStatus = (typeof ACTIVE)[number];
export type TerminalStatus = (typeof TERMINAL)[number];
export const DEPLOY_STATUSES = [...ACTIVE, ...TERMINAL] as const;
export type DeployStatus = (typeof DEPLOY_STATUSES)[number];
/** `hook`: an app's deploy hook (a CI job's call to its secret URL). */
export const DEPLOY_TRIGGERS = ['manual', 'push', 'tag', 'rollback', 'hook'] as const;
export type Trigger = (typeof DEPLOY_TRIGGERS)[number];
/** Triggers that never answer 409 for an active deployment: they wait behind it, the newest one replacing a waiting one. */
export const COALESCED_TRIGGERS: readonly Trigger[] = ['push', 'tag', 'hook'];

export function isTerminal(s: string): s is TerminalStatus {
  return (TERMINAL as readonly string[]).includes(s);
}

/** What was deployed, so a rollback can plan the same stack again without a clone. */
export type DeploySpec =
  | { kind: 'compose'; path: string; text: string }
  | { kind: 'dockerfile'; path: string }
  | { kind: 'image'; image: string };

/** The file a deployment read (`svc.yaml`) and, by setting path, the values it applied from it. */
export interface DeploymentConfig {
  file: string;
  applied: Record<string, unknown>;
}

export interface Deployment {
  id: string;
  app_id: string;
  status: DeployStatus;
  trigger: Trigger;
  ref: string | null;
  commit: string | null;
  commit_subject: string | null;
  /** The main service's image (the single service, else the first built one, else the first). */
  image: string | null;
  /** Every service's image: what a rollback to this deployment reuses. */
  images: Record<string, string> | null;
  /**
   * Every service's exact image (`sha256:...`): the registry's manifest digest of a pulled image,
   * the image id of one only the engine has. A rollback runs exactly these.
   */
  image_digests: Record<string, string> | null;
  /** Asked to pull every image again before deploying (`pull: true`, a deploy hook). */
  pull: boolean;
  error: string | null;
  rollback_of: string | null;
  delivery_id: string | null;
  /** True for a push coalesced behind the app's running deployment (starts when it ends). */
  waiting: boolean;
  /** The username of the operator who asked for it; null for a forge's push. */
  created_by: string | null;
  /** What this deployment took from the repository's configuration file; null: the commit had none. */
  config: DeploymentConfig | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
}

export function mainImage(images: Record<string, string> | null): string | null {
  if (!images) return null;
  if (images.app) return images.app;
  const built = Object.values(images).find((i) => i.startsWith('svc/'));
  return built ?? Object.values(images)[0] ?? null;
}

export function toDeployment(row: DeploymentTable): Deployment {
  const images = row.images ? (JSON.parse(row.images) as Record<string, string>) : null;
  return {
    id: row.id,
    app_id: row.app_id,
    status: row.status as DeployStatus,
    trigger: row.trigger as Trigger,
    ref: row.ref,
    commit: row.commit_sha,
    commit_subject: row.commit_subject,
    image: mainImage(images),
    images,
    image_digests: row.image_digests ? (JSON.parse(row.image_digests) as Record<string, string>) : null,
    pull: row.pull === 1,
    error: row.error,
    rollback_of: row.rollback_of,
    delivery_id: row.delivery_id,
    waiting: row.waiting === 1,
    created_by: row.created_by ?? null,
    config: row.config ? (JSON.parse(row.config) as DeploymentConfig) : null,
    created_at: row.created_at,
    started_at: row.started_at,
    finished_at: row.finished_at,
  };
}
