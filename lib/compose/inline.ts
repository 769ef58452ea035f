// The inline compose source: `{"type":"compose","compose":"<YAML>"}`, a compose file stored with
// the app instead of fetched from a repository (add-ons install this way). It goes through the
// same compose policy as a repository's file (parseCompose, then planStack at deploy), with two
// consequences of having no repository: nothing is built (`build:` is refused) and no relative
// bind mount exists (`./x:/y` is refused), both said at save time rather than at deploy.
import { parseCompose } from './parse.js';
import type { ComposeModel, Finding } from './types.js';

/** The name the deployment log and the recorded spec give an inline file. */
export const INLINE_COMPOSE_PATH = 'compose.yaml';
export const MAX_INLINE_COMPOSE_BYTES = 64 * 1024;

/**
 * Errors (as `{field, message}`) the compose policy finds in an inline file with this env; empty
 * when it can be deployed. Variables not in `env` interpolate as empty, as at deploy time.
 */
export function inlineComposeProblems(
  text: string,
  env: Record<string, string> = {},
): Array<{ field: string; message: string }> {
  if (Buffer.byteLength(text, 'utf8') > MAX_INLINE_COMPOSE_BYTES)
    return [{ field: 'source.compose', message: `larger than ${MAX_INLINE_COMPOSE_BYTES} bytes` }];
  const parsed = parseCompose(text, { env });
  const out = parsed.findings
    .filter((f: Finding) => f.level === 'error')
    .map((f) => ({
      field: 'source.compose',
      message: `${f.service ? `${f.service}: ` : ''}${f.key}: ${f.message}`,
    }));
  if (!parsed.model) return out.length ? out : [{ field: 'source.compose', message: 'cannot be parsed' }];
  for (const [name, svc] of Object.entries(parsed.model.services)) {
    if (svc.build)
      out.push({
        field: 'source.compose',
        message: `${name}: build: an inline compose file has no repository to build from; use an image`,
      });
    else if (!svc.image) out.push({ field: 'source.compose', message: `${name}: image: required` });
  }
  if (hasRelativeBind(parsed.model))
    out.push({
      field: 'source.compose',
      message: 'relative bind mounts need a repository; use named volumes',
    });
  return out;
}

// The same test as the deploy's relativeBinds (lib/deploy/mounts.ts), which copies them.
const hasRelativeBind = (model: ComposeModel): boolean =>
  Object.values(model.services).some((s) => s.volumes.some((m) => m.type === 'bind' && m.relative));
