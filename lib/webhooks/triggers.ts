// Which push deploys: push rules glob the branch name, tag rules the tag name. With no enabled
// rule at all, the app's configured branch deploys on push and tags do not.
import type Picomatch from 'picomatch';
import { lazyRequire } from '../util/lazy.js';

const picomatch = lazyRequire<typeof Picomatch>('picomatch');
import type { PushRef } from './payload.js';

/** What a deploy trigger reacts to: a pushed branch or a pushed tag. */
export const TRIGGER_EVENTS = ['push', 'tag', 'pull_request'] as const;
export type TriggerEvent = (typeof TRIGGER_EVENTS)[number];

export interface TriggerRule {
  event: TriggerEvent;
  pattern: string;
  enabled: boolean;
}

export type TriggerMatch =
  | { deploy: true; ref: string; trigger: 'push' | 'tag'; commit: string | null; pattern: string | null }
  | { deploy: false; reason: string };

export const MAX_PATTERN = 255;

// Branch and tag names may contain "/" (release/1.x), so "*" stays within one segment and "**"
// crosses them, as in git's own refspec globs. Dotfiles are not special for refs: checkRef
// already refuses components starting with ".".
const GLOB_OPTIONS: Picomatch.PicomatchOptions = { dot: true, nocase: false, maxLength: MAX_PATTERN };

export function validatePattern(pattern: unknown): { ok: true } | { ok: false; reason: string } {
  if (typeof pattern !== 'string' || pattern.length === 0) return { ok: false, reason: 'pattern is empty' };
  if (pattern.length > MAX_PATTERN)
    return { ok: false, reason: `pattern is longer than ${MAX_PATTERN} characters` };
  if (/[\u0000-\u001f\u007f-\u009f]/.test(pattern))
    return { ok: false, reason: 'pattern contains control characters' };
  if (pattern.trim() !== pattern) return { ok: false, reason: 'pattern starts or ends with whitespace' };
  try {
    picomatch().makeRe(pattern, GLOB_OPTIONS);
  } catch {
    return { ok: false, reason: 'pattern is not a valid glob' };
  }
  return { ok: true };
}

export function matchTriggers(
  rules: readonly TriggerRule[],
  push: PushRef & { also?: PushRef[] },
  defaultBranch: string,
): TriggerMatch {
  // Bitbucket can put several refs in one delivery: the first that deploys wins, and when none
  // does, the reason given is the leading ref's.
  const first = matchOne(rules, push, defaultBranch);
  if (first.deploy || !push.also?.length) return first;
  for (const other of push.also) {
    const m = matchOne(rules, other, defaultBranch);
    if (m.deploy) return m;
  }
  return first;
}

function matchOne(rules: readonly TriggerRule[], push: PushRef, defaultBranch: string): TriggerMatch {
  const what = push.ref_type === 'branch' ? 'branch' : 'tag';
  if (push.deleted || push.after === null)
    return { deploy: false, reason: `${what} "${push.name}" was deleted` };
  // pull_request rules say which target branches get previews (matchPreviewTarget), not what deploys.
  const enabled = rules.filter(
    (r) => r.enabled && r.event !== 'pull_request' && validatePattern(r.pattern).ok,
  );
  const trigger = push.ref_type === 'branch' ? 'push' : 'tag';
  if (enabled.length === 0) {
    if (push.ref_type === 'tag')
      return { deploy: false, reason: `tag "${push.name}": tags deploy only with a tag rule` };
    if (push.name !== defaultBranch)
      return { deploy: false, reason: `branch "${push.name}" is not the app's branch "${defaultBranch}"` };
    return { deploy: true, ref: push.name, trigger, commit: push.after, pattern: null };
  }
  const hit = enabled.find(
    (r) => r.event === trigger && picomatch().isMatch(push.name, r.pattern, GLOB_OPTIONS),
  );
  if (!hit) return { deploy: false, reason: `no enabled ${trigger} rule matches ${what} "${push.name}"` };
  return { deploy: true, ref: push.name, trigger, commit: push.after, pattern: hit.pattern };
}

/**
 * Whether a pull request into `target` gets a preview: with no enabled pull_request rule, every
 * target branch does; with some, one of them must match the target branch's name.
 */
export function matchPreviewTarget(
  rules: readonly TriggerRule[],
  target: string,
): { ok: true } | { ok: false; reason: string } {
  const enabled = rules.filter(
    (r) => r.enabled && r.event === 'pull_request' && validatePattern(r.pattern).ok,
  );
  if (enabled.length === 0 || enabled.some((r) => picomatch().isMatch(target, r.pattern, GLOB_OPTIONS)))
    return { ok: true };
  return { ok: false, reason: `no enabled pull_request rule matches target branch "${target}"` };
}
