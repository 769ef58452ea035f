// The app resource: its name (also its slug in every engine name) and where its code comes from.
import type { AppTable } from '../db/schema.js';
import { redactUrl } from '../git/validate.js';
import type { StackOverride } from '../buildplan/types.js';
import { PULL_POLICIES, type PullPolicy } from '../docker/pull.js';

export const APP_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;
// `control` would collide with the control plane's own network (svc-control).
export const RESERVED_NAMES: ReadonlySet<string> = new Set(['control']);

/**
 * How a git app is built: detected from the files (`auto`), the repository's Dockerfile or compose
 * file, or a stack named by the operator with what detection would choose overridden field by field.
 * Unset: the compose file, else the Dockerfile, else `auto`.
 */
export type BuildSetting =
  | { type: 'auto' }
  | { type: 'dockerfile'; path?: string }
  | { type: 'compose'; path?: string }
  | StackOverride;

export type AppSource =
  | { type: 'git'; repo_url: string; branch: string; compose_path?: string; build?: BuildSetting }
  | { type: 'image'; image: string; pull?: PullPolicy }
  | { type: 'compose'; compose: string; pull?: PullPolicy };

/** When a deploy pulls an image or compose app's images (lib/docker/pull.ts): absent is `if_missing`. */
export { PULL_POLICIES, type PullPolicy };

/** Bounds of one image build (PATCH /api/apps/{id} `build_limits`); an absent field is unbounded. */
export interface BuildLimits {
  memory_mb?: number;
  cpus?: number;
  timeout_s?: number;
}
export const APP_STATUSES = [
  'created',
  'deploying',
  'running',
  'degraded',
  'stopped',
  'failed',
  'crash_loop',
  'oom',
  'sleeping',
] as const;
export type AppStatus = (typeof APP_STATUSES)[number];

// ctx.env of every handler carries it (the service registry of lib/http/handler.ts).
declare module '../http/handler.js' {
  interface Services {
    /** Runs git with the app's deploy key when it has one (set up by the keys module). */
    gitAuth?: GitAuth;
  }
}

/** Runs git for an app with the environment its deploy key needs (set up by lib/keys). */
export type GitAuth = <T>(app: App, fn: (gitEnv: Record<string, string>) => Promise<T>) => Promise<T>;

export interface App {
  id: string;
  name: string;
  source: AppSource;
  status: AppStatus;
  build_limits: BuildLimits | null;
  /** Idle minutes after which the app sleeps (its containers stop until a request wakes it); null: never. */
  sleep_after_minutes: number | null;
  /** Run once per deployment before the new version takes traffic (exec form); null: none. */
  release_command: string[] | null;
  /** Seconds the release command may run before it fails the deployment. */
  release_timeout_s: number;
  created_at: string;
  updated_at: string;
}

export function toApp(row: AppTable): App {
  const source = JSON.parse(row.source) as AppSource;
  // A row stored before credentials in repository URLs were refused keeps them only on disk: every
  // view, export, log line and clone attempt gets the redacted URL (which git refuses to use).
  if (source.type === 'git') source.repo_url = redactUrl(source.repo_url);
  return {
    id: row.id,
    name: row.name,
    source,
    status: row.status as AppStatus,
    build_limits: row.build_limits ? (JSON.parse(row.build_limits) as BuildLimits) : null,
    sleep_after_minutes: row.sleep_after_minutes ?? null,
    release_command: row.release_command ? (JSON.parse(row.release_command) as string[]) : null,
    release_timeout_s: row.release_timeout_s ?? RELEASE_TIMEOUT_S,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** The release command's default time limit, and its bounds. */
export const RELEASE_TIMEOUT_S = 600;
export const RELEASE_TIMEOUT_MAX_S = 6 * 3600;

/** Bounds of `sleep_after_minutes`: one minute to one week. */
export const SLEEP_MIN_MINUTES = 1;
export const SLEEP_MAX_MINUTES = 10_080;
/** A service's drain period after a switch (seconds; PATCH .../services/{name} `drain_s`). */
export const DEFAULT_DRAIN_S = 30;
export const MAX_DRAIN_S = 3600;

export const ENV_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;
export const ENV_MAX_VARS = 500;
export const ENV_MAX_VALUE = 64 * 1024;
