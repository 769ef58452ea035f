// The deployment service's types, apart from the class, so that the service registry (`Services`,
// below) can name the service without importing what takes the services. Type-only imports here.
import type { App } from '../apps/model.js';
import type { Deployment, Trigger } from '../apps/deployment.js';
import type { ProbeMode } from './health.js';

export interface PipelineOptions {
  workRoot: string;
  cloneTimeoutMs: number;
  cloneMaxBytes: number;
  healthTimeoutMs: number;
  settleMs: number;
  probe: ProbeMode;
  probeImage?: string;
  /** Deployments whose copies of the repository are kept for rollback (default 5). */
  keepImages?: number;
}

export interface DeployServiceOptions extends PipelineOptions {
  /** Deployments waiting for a worker, beyond which enqueue answers 503. */
  maxQueue: number;
  keepImages: number;
  /** The reaper fails deployments active for longer than this. */
  timeoutMs: number;
  reaperEveryMs: number;
  /**
   * How long a timed-out deployment may take to stop after the reaper aborted it. Past this its
   * worker is wedged (an engine call that never answers): the reaper records the failure itself.
   */
  reapGraceMs: number;
}

export interface EnqueueInput {
  trigger: Trigger;
  /** Branch or tag; default: the app's branch. Validated like every ref. */
  ref?: string | null;
  /** Webhook delivery id (recorded, shown, audited). */
  deliveryId?: string | null;
  /** The commit the forge announced (informational: the ref's head at fetch time is deployed). */
  commit?: string | null;
  /** Deploy exactly this commit (4..40 hex digits), which must be on `ref`'s history; git apps only. */
  pin?: string | null;
  /** Pull every image again before deploying ("pull latest and redeploy", deploy hooks). */
  pull?: boolean;
  /** The username of the operator who asked for it (null: a forge's push, the system). */
  createdBy?: string | null;
}

export interface EnqueueResult {
  deployment: Deployment;
  /** Queued pushes this one replaced (push/tag only); each is now `canceled`. */
  superseded: Deployment[];
}

// ctx.env of every handler carries it (the service registry of lib/http/handler.ts).
declare module '../http/handler.js' {
  interface Services {
    /** The deployment queue and workers; started by runtime/background.ts. */
    deployments: Deployments;
  }
}

/** What the rest of the control plane may ask of the deployment service (lib/deploy/service.ts). */
export interface Deployments {
  readonly opts: DeployServiceOptions;
  start(): Promise<void>;
  stop(): Promise<void>;
  getConcurrency(): number;
  setConcurrency(n: number): Promise<number>;
  queued(): string[];
  enqueue(app: App, input: EnqueueInput): Promise<EnqueueResult>;
  rollback(app: App, targetId: string, createdBy?: string | null): Promise<Deployment>;
  cancel(app: App, id: string): Promise<Deployment>;
  isRunning(id: string): boolean;
  recover(): Promise<void>;
  reap(): Promise<number>;
}
