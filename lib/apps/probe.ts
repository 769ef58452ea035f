// detect-compose and env-example: a shallow clone into a temporary directory that is always
// removed, bounded in time and size.
import type { Services } from '../http/handler.js';
import { HttpError, badRequest } from '../http/errors.js';
import { withTempClone, detectCompose, envExample, GitError } from '../git/index.js';
import type { App, GitAuth } from './model.js';
import type { Finding } from '../compose/types.js';

const PROBE_TIMEOUT_MS = 60_000;
const PROBE_MAX_BYTES = 256 * 1024 * 1024;

export type { GitAuth };

/** Without a deploy key, git runs with no extra environment. */
export const noGitAuth: GitAuth = (_app, fn) => fn({});

export function gitErrorToHttp(e: unknown): unknown {
  if (!(e instanceof GitError)) return e;
  if (e.kind === 'aborted') return new HttpError('service_unavailable', e.message);
  return badRequest(`Could not clone the repository: ${e.message}`, [
    { field: 'source', message: e.message },
  ]);
}

export function probeRepository(
  env: Services,
  app: App,
  what: 'compose',
  gitAuth?: GitAuth,
): Promise<{
  compose_path: string | null;
  dockerfile: string | null;
  services: string[];
  findings: Finding[];
}>;
export function probeRepository(
  env: Services,
  app: App,
  what: 'env-example',
  gitAuth?: GitAuth,
): Promise<{ items: { key: string; value: string }[] }>;
export async function probeRepository(
  env: Services,
  app: App,
  what: 'compose' | 'env-example',
  gitAuth: GitAuth = env.gitAuth ?? noGitAuth,
) {
  if (app.source.type !== 'git')
    throw badRequest('Only git apps have a repository to probe', [
      { field: 'source.type', message: 'not git' },
    ]);
  const { repo_url, branch, compose_path } = app.source;
  try {
    return await gitAuth(app, (gitEnv) =>
      withTempClone(
        { url: repo_url, ref: branch, timeoutMs: PROBE_TIMEOUT_MS, maxBytes: PROBE_MAX_BYTES, env: gitEnv },
        async (dir) => {
          if (what === 'env-example') return { items: await envExample(dir) };
          const d = await detectCompose(dir, { composePath: compose_path });
          return {
            compose_path: d.compose_path,
            dockerfile: d.dockerfile,
            services: d.services,
            findings: d.findings,
          };
        },
      ),
    );
  } catch (e) {
    throw gitErrorToHttp(e);
  }
}
