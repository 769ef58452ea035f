// POST /api/apps/apply: a file (lib/appspec/spec.ts) creates the app it names or updates it. The
// changes are computed first as `{path, before, after}` (all a dry run answers); nothing the file
// does not name is removed unless it says `prune: true`. Secrets travel as `${KEY}` placeholders:
// a placeholder keeps the app's value, and a key the app lacks is answered in `missing_secrets`.
import type { Services } from '../http/handler.js';
import { badRequest } from '../http/errors.js';
import type { App, AppSource } from '../apps/model.js';
import { createApp } from '../apps/ops.js';
import { deleteAppRows, getAppByName, patchServiceSettings, updateApp } from '../apps/store.js';
import { removeEnvVar, revealEnv, setEnvVar } from '../apps/env.js';
import { requireSealer } from '../crypto/seal.js';
import { patchClusterSettings } from '../cluster/settings.js';
import { addTrigger, listTriggers, removeTrigger } from '../webhooks/store.js';
import { exportAppFile, placeholder, type AppFile } from './spec.js';
import { commandWords } from './file.js';

export interface Change {
  path: string;
  before: unknown;
  after: unknown;
}

export interface ApplyResult {
  app: App | null;
  created: boolean;
  changes: Change[];
  missing_secrets: string[];
}

type Flat = Map<string, unknown>;

function flattenInto(out: Flat, prefix: string, v: unknown): void {
  if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
    for (const [k, x] of Object.entries(v)) if (x !== undefined) flattenInto(out, `${prefix}.${k}`, x);
  } else out.set(prefix, v);
}

/** The settings of a file by path: `source.repo_url`, `services.web.port`, `env.KEY`. */
function flatten(f: AppFile | null): Flat {
  const out: Flat = new Map();
  if (!f) return out;
  flattenInto(out, 'source', f.source);
  if (f.build) flattenInto(out, 'build', f.build);
  for (const [name, s] of Object.entries(f.services ?? {})) flattenInto(out, `services.${name}`, s);
  if (f.sleep_after_minutes !== undefined) out.set('sleep_after_minutes', f.sleep_after_minutes);
  if (f.release_command !== undefined) out.set('release_command', commandWords(f.release_command));
  for (const [k, v] of Object.entries(f.env ?? {}))
    out.set(`env.${k}`, typeof v === 'string' ? v : placeholder(k));
  // The triggers are one setting: the list as a whole (enabled written only when false).
  if (f.triggers)
    out.set(
      'triggers',
      f.triggers.map((t) => ({
        event: t.event,
        pattern: t.pattern,
        ...(t.enabled === false ? { enabled: false } : {}),
      })),
    );
  return out;
}

/** The spec as export would write it: the build out of the source, the default branch left out. */
function normalise(spec: AppFile): AppFile {
  const source = { ...spec.source } as Record<string, unknown>;
  let build = spec.build;
  if (spec.source.type === 'git') {
    build ??= spec.source.build;
    delete source.build;
    if (source.branch === 'main') delete source.branch;
  }
  return { ...spec, source: source as AppFile['source'], ...(build ? { build } : {}) };
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** What applying `spec` over `current` (null: a new app) changes, in path order. */
export function diffFiles(current: AppFile | null, spec: AppFile): Change[] {
  const before = flatten(current);
  const after = flatten(normalise(spec));
  const changes: Change[] = [];
  for (const [path, v] of after)
    if (!same(before.get(path), v)) changes.push({ path, before: before.get(path) ?? null, after: v });
  for (const [path, v] of before) {
    if (after.has(path)) continue;
    // The source is one setting: what a new source leaves out goes; the rest only with prune.
    if (path.startsWith('source.') || spec.prune) changes.push({ path, before: v, after: null });
  }
  return changes.sort((a, b) => a.path.localeCompare(b.path));
}

function refuseUnstored(spec: AppFile): void {
  if (spec.jobs !== undefined)
    throw badRequest(
      "Jobs are read from the repository's svc.yaml at deploy, or managed under /api/apps/{id}/jobs",
      [{ field: 'jobs', message: 'not applied through this route' }],
    );
  for (const [name, s] of Object.entries(spec.services ?? {}))
    if (s.command !== undefined)
      throw badRequest(
        "A service command is read from the repository's svc.yaml at deploy, not stored by the API",
        [{ field: `services.${name}.command`, message: 'only in the repository file' }],
      );
}

/** The app's source with the file's build in it (git apps). */
function effectiveSource(spec: AppFile): AppSource {
  const build = spec.build ?? (spec.source.type === 'git' ? spec.source.build : undefined);
  if (spec.source.type !== 'git') {
    if (spec.build)
      throw badRequest('A build applies to git apps only', [{ field: 'build', message: 'git apps only' }]);
    return spec.source;
  }
  return { ...spec.source, ...(build ? { build } : {}) } as AppSource;
}

/** Dry run or not, the same answer: the changes, and what the app will still lack. */
export async function planApply(
  deps: Pick<Services, 'db' | 'sealer'>,
  spec: AppFile,
): Promise<{ app: App | null; current: AppFile | null; changes: Change[]; missing: string[] }> {
  refuseUnstored(spec);
  effectiveSource(spec);
  const app = await getAppByName(deps.db, spec.name);
  const current = app ? await exportAppFile(deps, app) : null;
  const changes = diffFiles(current, spec);
  const has = new Set(Object.keys(current?.env ?? {}));
  const missing = Object.entries(spec.env ?? {})
    .filter(([k, v]) => (typeof v === 'object' || v === placeholder(k)) && !has.has(k))
    .map(([k]) => k);
  return { app, current, changes, missing };
}

async function applyEnvChange(
  deps: Pick<Services, 'db' | 'sealer'>,
  appId: string,
  c: Change,
): Promise<void> {
  const key = c.path.slice('env.'.length);
  if (c.after === null) {
    await removeEnvVar(deps.db, deps.sealer, appId, key, null);
  } else if (c.after !== placeholder(key)) {
    await setEnvVar(deps.db, deps.sealer, appId, { key, value: String(c.after), secret: false }, null);
  } else if (c.before !== null) {
    // A plain variable the file now calls a secret: same value, kept sealed and masked from now on.
    const value = await revealEnv(deps.db, deps.sealer, appId, key);
    if (value !== null) await setEnvVar(deps.db, deps.sealer, appId, { key, value, secret: true }, null);
  }
}

async function applyChanges(
  deps: Pick<Services, 'db' | 'sealer' | 'now'>,
  app: App,
  spec: AppFile,
  changes: Change[],
): Promise<void> {
  const changed = (prefix: string) => changes.some((c) => c.path.startsWith(prefix));
  if (changed('source.') || changed('build.')) {
    const source = effectiveSource(spec);
    const keepBuild =
      !spec.prune && !spec.build && app.source.type === 'git' && source.type === 'git' && !source.build;
    const next =
      keepBuild && app.source.type === 'git' && app.source.build
        ? { ...source, build: app.source.build }
        : source;
    await updateApp(deps.db, app.id, { source: next as AppSource }, deps.now());
  }
  if (changed('release_command'))
    await updateApp(
      deps.db,
      app.id,
      { release_command: spec.release_command === undefined ? null : commandWords(spec.release_command) },
      deps.now(),
    );
  if (changed('sleep_after_minutes'))
    await updateApp(deps.db, app.id, { sleep_after_minutes: spec.sleep_after_minutes ?? null }, deps.now());
  for (const c of changes) {
    const m = /^services\.([^.]+)\.(port|health_path|replicas)$/.exec(c.path);
    if (m && m[2] === 'replicas')
      await patchClusterSettings(deps.db, app.id, m[1]!, { replicas: (c.after as number | null) ?? null });
    else if (m) await patchServiceSettings(deps.db, app.id, m[1]!, { [m[2]!]: c.after ?? null });
  }
  if (changed('triggers'))
    await replaceTriggers(deps, app.id, spec.prune ? (spec.triggers ?? []) : spec.triggers!);
  const envChanges = changes.filter((c) => c.path.startsWith('env.'));
  if (envChanges.length) requireSealer(deps.sealer);
  for (const c of envChanges) await applyEnvChange(deps, app.id, c);
}

async function replaceTriggers(
  deps: Pick<Services, 'db' | 'now'>,
  appId: string,
  next: NonNullable<AppFile['triggers']>,
): Promise<void> {
  for (const t of await listTriggers(deps.db, appId)) await removeTrigger(deps.db, appId, t.id);
  for (const t of next) await addTrigger(deps.db, appId, { ...t, enabled: t.enabled ?? true }, deps.now());
}

/** Creates or updates the app the spec names. A new app that fails halfway is removed whole. */
export async function applyAppFile(env: Services, spec: AppFile, dryRun: boolean): Promise<ApplyResult> {
  const plan = await planApply(env, spec);
  if (dryRun) return { app: plan.app, created: false, changes: plan.changes, missing_secrets: plan.missing };
  if (plan.app) {
    await applyChanges(env, plan.app, spec, plan.changes);
    return { app: plan.app, created: false, changes: plan.changes, missing_secrets: plan.missing };
  }
  const app = await createApp(env, spec.name, effectiveSource(spec));
  try {
    await applyChanges(
      env,
      app,
      spec,
      plan.changes.filter((c) => !c.path.startsWith('source.') && !c.path.startsWith('build.')),
    );
  } catch (e) {
    await deleteAppRows(env.db, app.id);
    throw e;
  }
  return { app, created: true, changes: plan.changes, missing_secrets: plan.missing };
}
