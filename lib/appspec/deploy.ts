// A deployment reads the app's svc.yaml from the commit it deploys and applies it: the file wins
// for what it names, the API's settings for the rest. Reading and checking happen before anything
// changes (an invalid file or a missing secret fails the deployment and the running version keeps
// serving); the settings the file names are then stored, so the proxy, the health gate and the
// dashboard all see one answer, and the deployment records what it applied.
import { lstat, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Services } from '../http/handler.js';
import type { App } from '../apps/model.js';
import type { DeploymentConfig } from '../apps/deployment.js';
import { patchServiceSettings, updateApp } from '../apps/store.js';
import { patchClusterSettings } from '../cluster/settings.js';
import { StackError } from '../docker/index.js';
import { appJobs, createJob, updateJob } from '../jobs/jobs.js';
import type { StackPlan } from '../docker/index.js';
import {
  MAX_SVC_FILE_BYTES,
  SVC_FILE_NAMES,
  SvcFileError,
  commandWords,
  parseSvcFile,
  type SvcFile,
} from './file.js';

export interface LoadedConfig {
  name: string;
  file: SvcFile;
}

/** The first of svc.yaml, svc.yml, svc.json at the checkout's root; null when there is none. */
export async function readSvcFile(dir: string): Promise<LoadedConfig | null> {
  for (const name of SVC_FILE_NAMES) {
    const path = join(dir, name);
    const st = await lstat(path).catch(() => null);
    if (!st) continue;
    // A link could name a file outside the repository: only the repository's own file is read.
    if (!st.isFile()) throw new StackError(`${name}: must be a regular file, not a link or a folder`);
    if (st.size > MAX_SVC_FILE_BYTES)
      throw new StackError(`${name}: larger than ${MAX_SVC_FILE_BYTES} bytes`);
    try {
      return { name, file: parseSvcFile(name, await readFile(path, 'utf8')) };
    } catch (e) {
      if (e instanceof SvcFileError) throw new StackError(`invalid ${e.message}`);
      throw e;
    }
  }
  return null;
}

/** Fails naming every secret the file declares that the app does not have. */
export function checkDeclaredSecrets(cfg: LoadedConfig, appEnv: Readonly<Record<string, string>>): void {
  const missing = Object.entries(cfg.file.env ?? {})
    .filter(([k, v]) => typeof v === 'object' && appEnv[k] === undefined)
    .map(([k]) => k);
  if (missing.length)
    throw new StackError(
      `${cfg.name} declares the secret${missing.length > 1 ? 's' : ''} ${missing.join(', ')}, which the app does not have: set ${missing.length > 1 ? 'them' : 'it'} in the app's env and deploy again`,
    );
}

/** The file's non-secret defaults under the app's own values; answers the keys it added. */
export function withEnvDefaults(cfg: LoadedConfig, appEnv: Record<string, string>): string[] {
  const added: string[] = [];
  for (const [k, v] of Object.entries(cfg.file.env ?? {}))
    if (typeof v === 'string' && appEnv[k] === undefined) {
      appEnv[k] = v;
      added.push(k);
    }
  return added;
}

/**
 * Stores the settings the file names (service ports and health paths, replicas, sleep) and
 * answers the record of what was applied, by path. The build and env defaults were applied by the
 * caller; commands are applied to the plan by `applyCommands`.
 */
export async function storeFileSettings(
  deps: Services,
  app: App,
  cfg: LoadedConfig,
  envAdded: string[],
  say: (line: string) => void,
): Promise<DeploymentConfig> {
  const applied: Record<string, unknown> = {};
  const f = cfg.file;
  if (f.build) applied.build = f.build;
  for (const [name, s] of Object.entries(f.services ?? {})) {
    const patch = { port: s.port, health_path: s.health_path };
    if (s.port !== undefined || s.health_path !== undefined)
      await patchServiceSettings(deps.db, app.id, name, patch);
    if (s.replicas !== undefined) await patchClusterSettings(deps.db, app.id, name, { replicas: s.replicas });
    for (const key of ['port', 'health_path', 'replicas', 'command'] as const)
      if (s[key] !== undefined) applied[`services.${name}.${key}`] = s[key];
  }
  if (f.release_command !== undefined) applied.release_command = f.release_command;
  for (const j of f.jobs ?? []) applied[`jobs.${j.name}`] = await syncJob(deps, app, j);
  if (f.sleep_after_minutes !== undefined && f.sleep_after_minutes !== app.sleep_after_minutes) {
    await updateApp(deps.db, app.id, { sleep_after_minutes: f.sleep_after_minutes }, deps.now());
  }
  if (f.sleep_after_minutes !== undefined) applied.sleep_after_minutes = f.sleep_after_minutes;
  for (const k of envAdded) applied[`env.${k}`] = 'default';
  for (const [k, v] of Object.entries(f.env ?? {})) if (typeof v === 'object') applied[`env.${k}`] = 'secret';
  const names = Object.keys(applied);
  say(`${cfg.name}: applied ${names.length ? names.join(', ') : 'nothing (the file names no setting)'}`);
  return { file: cfg.name, applied };
}

/** Creates the job the file names, or updates the app's job of that name; answers which. */
async function syncJob(env: Services, app: App, j: NonNullable<SvcFile['jobs']>[number]): Promise<string> {
  const input = { ...j, command: commandWords(j.command) };
  const existing = (await appJobs(env, app.id)).find((x) => x.name === j.name);
  if (existing) await updateJob(env, app.id, existing.id, input);
  else await createJob(env, app.id, input);
  return existing ? 'updated' : 'created';
}

/** The release command a deployment runs: the file's when it names one, else the app's. */
export function releaseCommandOf(cfg: LoadedConfig | null, app: App): string[] | null {
  return cfg?.file.release_command !== undefined
    ? commandWords(cfg.file.release_command)
    : app.release_command;
}

/** Every service the file names must be planned; its command replaces the image's. Call before storing. */
export function applyCommands(cfg: LoadedConfig, plan: StackPlan): void {
  for (const [name, s] of Object.entries(cfg.file.services ?? {})) {
    const svc = plan.services.find((p) => p.name === name);
    if (!svc)
      throw new StackError(
        `${cfg.name}: services.${name}: the app has no service "${name}" (it has ${plan.services.map((p) => p.name).join(', ')})`,
      );
    if (s.command !== undefined) svc.config = { ...svc.config, Cmd: commandWords(s.command) };
  }
}

/** What a checkout's svc.yaml means for a deployment: the file (or null), the defaults it added. */
export interface RepoConfig {
  cfg: LoadedConfig | null;
  envAdded: string[];
}

/**
 * Reads and checks the checkout's file before anything changes (a declared secret the app lacks
 * fails here), adds its env defaults to `appEnv`, and answers the build source it names.
 */
export async function readRepoConfig<S extends { compose_path?: string; build?: unknown }>(
  dir: string,
  src: S,
  appEnv: Record<string, string>,
): Promise<RepoConfig & { buildSource: S }> {
  const cfg = await readSvcFile(dir);
  if (!cfg) return { cfg, envAdded: [], buildSource: src };
  checkDeclaredSecrets(cfg, appEnv);
  const envAdded = withEnvDefaults(cfg, appEnv);
  const buildSource = cfg.file.build ? { ...src, compose_path: undefined, build: cfg.file.build } : src;
  return { cfg, envAdded, buildSource };
}

/** Once the plan is made: the file's commands in it, its settings stored; null without a file. */
export async function applyRepoConfig(
  deps: Services,
  app: App,
  repo: RepoConfig,
  plan: StackPlan,
  say: (line: string) => void,
): Promise<DeploymentConfig | null> {
  if (!repo.cfg) return null;
  applyCommands(repo.cfg, plan);
  return storeFileSettings(deps, app, repo.cfg, repo.envAdded, say);
}
