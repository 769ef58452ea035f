// Which build a checkout gets (its compose file, its Dockerfile, or a Dockerfile generated from its
// files by lib/buildplan) and, for a generated one, the plan, its log lines and its text as the
// engine builds it. The generated Dockerfile never lives in the checkout: the build context carries
// it under GENERATED_DOCKERFILE and leaves out any repository file of that name (lib/docker/build.ts).
import type { Services } from '../http/handler.js';
import type { App, AppSource, BuildSetting } from '../apps/model.js';
import { gitErrorToHttp, noGitAuth } from '../apps/probe.js';
import { resolveEnv } from '../apps/env.js';
import { HttpError, badRequest, conflict } from '../http/errors.js';
import { checkRef, withTempClone } from '../git/index.js';
import { detect, diskFiles, isPlan, PlanError, type Plan, type StackOverride } from '../buildplan/index.js';
import { StackError } from '../docker/engine.js';
import { COMPOSE_FILES, detectCompose, readComposeFile, type Detection } from '../git/index.js';
import type { DeploySpec } from '../apps/deployment.js';

/** The generated Dockerfile's name in the build context (a dotfile: static sites drop dotfiles). */
export const GENERATED_DOCKERFILE = '.svc-build.Dockerfile';

type GitSource = Extract<AppSource, { type: 'git' }>;

export type ResolvedBuild =
  | { kind: 'compose'; spec: Extract<DeploySpec, { kind: 'compose' }>; services: string[] }
  | { kind: 'dockerfile'; spec: Extract<DeploySpec, { kind: 'dockerfile' }> }
  | { kind: 'generated'; setting: 'auto' | 'stack'; override: StackOverride | undefined };

function composeErrors(d: Detection): string | null {
  const errors = d.findings.filter((f) => f.level === 'error');
  return errors.length
    ? errors.map((f) => `${f.service ? `${f.service}: ` : ''}${f.key}: ${f.message}`).join('; ')
    : null;
}

/**
 * What the app's `source.build` makes of this checkout. Unset: the compose file, else the root
 * Dockerfile, else a generated build (`auto`). Throws a StackError with the reason otherwise.
 */
export async function resolveBuild(
  dir: string,
  src: GitSource,
  env: Record<string, string>,
): Promise<ResolvedBuild> {
  const b: BuildSetting | undefined = src.build;
  if (b?.type === 'auto') return { kind: 'generated', setting: 'auto', override: undefined };
  if (b?.type === 'stack') return { kind: 'generated', setting: 'stack', override: b };
  if (b?.type === 'dockerfile')
    return { kind: 'dockerfile', spec: { kind: 'dockerfile', path: b.path ?? 'Dockerfile' } };
  const composePath = b?.type === 'compose' ? (b.path ?? src.compose_path) : src.compose_path;
  const detected = await detectCompose(dir, { composePath, env });
  if (detected.compose_path) {
    const errors = composeErrors(detected);
    if (errors) throw new StackError(`the repository cannot be deployed: ${errors}`);
    return {
      kind: 'compose',
      spec: {
        kind: 'compose',
        path: detected.compose_path,
        text: await readComposeFile(dir, detected.compose_path),
      },
      services: detected.services,
    };
  }
  if (b?.type === 'compose')
    throw new StackError(
      `the build is set to a compose file, and the repository has none (looked for ${COMPOSE_FILES.join(', ')})`,
    );
  if (detected.dockerfile)
    return { kind: 'dockerfile', spec: { kind: 'dockerfile', path: detected.dockerfile } };
  return { kind: 'generated', setting: 'auto', override: undefined };
}

/** The plan a generated build follows; a StackError naming what was looked for when there is none. */
export async function generatePlan(dir: string, override: StackOverride | undefined): Promise<Plan> {
  let r;
  try {
    r = await detect(diskFiles(dir), override);
  } catch (e) {
    if (e instanceof PlanError) throw new StackError(`the build plan is refused: ${e.message}`);
    throw e;
  }
  if (!isPlan(r))
    throw new StackError(
      `nothing to build: ${r.message} (looked for ${r.looked_for.join(', ')}; or add a Dockerfile or a compose file)`,
    );
  return r;
}

/** The plan as the deployment log shows it before the build: the same facts as GET .../build-plan. */
export function planLines(plan: Plan, setting: 'auto' | 'stack'): string[] {
  const lines = [
    `build plan (${setting === 'auto' ? 'detected' : 'stack set on the app'}): stack ${plan.stack}, from ${plan.detected_from.join(', ') || '(override)'}`,
    `  runtime: ${plan.runtime.name} ${plan.runtime.version} (${plan.runtime.image})`,
    `  images: ${plan.images.join(', ')}`,
    `  install: ${plan.install ?? '(none)'}`,
    `  build: ${plan.build ?? '(none)'}`,
    `  start: ${plan.start ?? '(none)'}`,
    `  port: ${plan.port}`,
    ...plan.warnings.map((w) => `  warning: ${w}`),
    `  generated Dockerfile:`,
    ...plan.dockerfile
      .trimEnd()
      .split('\n')
      .map((l) => `    ${l}`),
  ];
  return lines;
}

const PREVIEW_TIMEOUT_MS = 60_000;
const PREVIEW_MAX_BYTES = 256 * 1024 * 1024;

/**
 * GET /api/apps/{id}/build-plan: what a deploy of `ref` would build, from a shallow clone into a
 * temporary directory (the same hardened git, bounds and deploy key as a deploy), removed after.
 * 422 not_detectable when nothing is recognisable; 409 when the ref builds its own Dockerfile or
 * compose file (no plan is generated for those).
 */
export async function previewBuildPlan(env: Services, app: App, ref: string | undefined): Promise<Plan> {
  if (app.source.type !== 'git')
    throw badRequest(`Only a git app is built from source (this app's source is ${app.source.type})`, [
      { field: 'source.type', message: 'not git' },
    ]);
  const src = app.source;
  const want = ref ?? src.branch;
  const v = checkRef(want);
  if (!v.ok) throw badRequest(`Invalid ref: ${v.reason}`, [{ field: 'ref', message: v.reason }]);
  const gitAuth = env.gitAuth ?? noGitAuth;
  const appEnv = await resolveEnv(env.db, env.sealer, app.id).catch(() => ({}));
  try {
    return await gitAuth(app, (gitEnv) =>
      withTempClone(
        {
          url: src.repo_url,
          ref: want,
          timeoutMs: PREVIEW_TIMEOUT_MS,
          maxBytes: PREVIEW_MAX_BYTES,
          env: gitEnv,
        },
        async (dir) => {
          const resolved = await resolveBuild(dir, src, appEnv);
          if (resolved.kind !== 'generated') {
            const what =
              resolved.kind === 'compose'
                ? `its compose file ${resolved.spec.path}`
                : `its Dockerfile ${resolved.spec.path}`;
            throw conflict(
              `A deploy of ${want} builds ${what}; a plan is generated only for builds of type auto or stack`,
            );
          }
          let r;
          try {
            r = await detect(diskFiles(dir), resolved.override);
          } catch (e) {
            if (e instanceof PlanError)
              throw badRequest(`The build plan is refused: ${e.message}`, [
                {
                  field: e.file === '(override)' ? `source.build.${e.field}` : e.file,
                  message: `${e.field} ${e.reason}`,
                },
              ]);
            throw e;
          }
          if (!isPlan(r))
            throw new HttpError('not_detectable', `Nothing to build at ${want}: ${r.message}`, [
              { message: `looked for ${r.looked_for.join(', ')}`, looked_for: r.looked_for },
            ]);
          return r;
        },
      ),
    );
  } catch (e) {
    if (e instanceof StackError) throw badRequest(e.message, [{ field: 'source.build', message: e.message }]);
    throw gitErrorToHttp(e);
  }
}
