// Reads the forges' own push payloads (as documented by GitHub, Gitea/Forgejo, GitLab and
// Bitbucket Cloud) into one small shape. Runs only after verifyDelivery accepted the delivery;
// anything odd inside a validly signed body is `invalid`, never queued.
import { checkRef } from '../git/validate.js';
import type { Provider } from './verify.js';

export interface PushRef {
  ref_type: 'branch' | 'tag';
  /** Branch or tag name, checked with lib/git checkRef. */
  name: string;
  /** Full ref: refs/heads/<name> or refs/tags/<name>. */
  ref: string;
  /**
   * The commit to deploy: the peeled commit when the forge says which one (an annotated tag's
   * commit rather than the tag object), else the ref's new object id. null for a deletion.
   */
  after: string | null;
  deleted: boolean;
  /**
   * The ref's previous commit as the forge signed it, when there was one (absent for a new ref).
   * With the ref and `after` it names one ref update: a replayed delivery repeats all three.
   */
  before?: string;
  /** First line of the head commit's message, cleaned and bounded, when the forge sends it. */
  head_subject?: string;
}

/**
 * `also` lists further refs of the same delivery: only Bitbucket groups several refs into one
 * push (`git push --all`). The other forges send one delivery per ref.
 */
export type PushDelivery = { kind: 'push' } & PushRef & { also?: PushRef[] };

export type ParsedDelivery =
  { kind: 'ping' } | PushDelivery | { kind: 'ignored'; reason: string } | { kind: 'invalid'; reason: string };

export const MAX_PAYLOAD_BYTES = 1024 * 1024;
const ZERO = /^0+$/;
const SHA = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/** A delivery whose body cannot be read as its event: the reason is shown in the delivery log. */
export class Invalid extends Error {}

export function parsePushEvent(provider: Provider, event: string, body: Uint8Array): ParsedDelivery {
  try {
    switch (provider) {
      case 'github':
        return githubStyle('github', event, body);
      case 'gitea':
        return githubStyle('gitea', event, body);
      case 'gitlab':
        return gitlab(event, body);
      case 'bitbucket':
        return bitbucket(event, body);
      default:
        return { kind: 'invalid', reason: 'unknown provider' };
    }
  } catch (e) {
    if (e instanceof Invalid) return { kind: 'invalid', reason: e.message };
    throw e;
  }
}

// GitHub: push {ref, after, deleted, head_commit}; ping {zen, hook_id}; delete {ref, ref_type}
// with a short ref name. A tag push is a push of refs/tags/...
// Gitea and Forgejo send the same shapes without `deleted` and without a ping: branch/tag
// deletion arrives as a `delete` event and, depending on the version, as a push with an all-zero
// `after`. Their "Test delivery" button sends a push built from the latest commit, which deploys
// like any push.
function githubStyle(forge: 'github' | 'gitea', event: string, body: Uint8Array): ParsedDelivery {
  if (forge === 'github' && event === 'ping') return { kind: 'ping' };
  if (event === 'delete') return deletion(json(body));
  if (event === 'create')
    return { kind: 'ignored', reason: 'create event (the push event for the same ref deploys)' };
  if (event !== 'push') return { kind: 'ignored', reason: `event "${event}" is not a push` };
  const p = json(body);
  const head = obj(p.head_commit);
  return fromRef(str(p.ref, 'ref'), {
    after: p.after,
    before: p.before,
    deleted: forge === 'github' && p.deleted === true,
    peeled: head ? head.id : undefined,
    message: head ? head.message : undefined,
  });
}

// GitLab: "Push Hook" {object_kind: "push"} and "Tag Push Hook" {object_kind: "tag_push"}, with
// ref, after, checkout_sha (the peeled commit; null when the ref was deleted) and commits[]
// (oldest first; the head is the one whose id is `after`). GitLab has no ping; its "Test"
// button sends a sample push.
function gitlab(event: string, body: Uint8Array): ParsedDelivery {
  const kind = event === 'Push Hook' ? 'push' : event === 'Tag Push Hook' ? 'tag_push' : null;
  if (!kind) return { kind: 'ignored', reason: `event "${event}" is not a push` };
  const p = json(body);
  if (p.object_kind !== kind) throw new Invalid(`object_kind does not match the "${event}" event`);
  const ref = str(p.ref, 'ref');
  if ((kind === 'tag_push') !== ref.startsWith('refs/tags/'))
    throw new Invalid(`${kind} of a ref that is not a ${kind === 'tag_push' ? 'tag' : 'branch'}`);
  const commits = Array.isArray(p.commits) ? p.commits : [];
  const head = commits.map(obj).find((c) => c && c.id === p.after);
  return fromRef(ref, {
    after: p.after,
    before: p.before,
    deleted: false,
    peeled: p.checkout_sha ?? undefined,
    message: head ? (head.title ?? head.message) : p.message,
  });
}

// Bitbucket Cloud: "repo:push" {push: {changes: [{new: {type, name, target: {hash, message}},
// old, created, closed}]}}; `new` is null when the ref was deleted (then `old` names it).
// There is no ping in Cloud; Bitbucket Server/Data Center's "diagnostics:ping" is honoured, and
// its push event (below) too.
function bitbucket(event: string, body: Uint8Array): ParsedDelivery {
  if (event === 'diagnostics:ping') return { kind: 'ping' };
  if (event === 'repo:refs_changed') return bitbucketServer(json(body));
  if (event !== 'repo:push') return { kind: 'ignored', reason: `event "${event}" is not a push` };
  const p = json(body);
  const push = obj(p.push);
  if (!push || !Array.isArray(push.changes)) throw new Invalid('push.changes is missing');
  if (push.changes.length === 0) return { kind: 'ignored', reason: 'push without changes' };
  if (push.changes.length > 100) throw new Invalid('too many changes in one push');
  const refs: PushRef[] = push.changes
    .map((c: unknown) => {
      const change = obj(c);
      if (!change) throw new Invalid('push.changes[] is not an object');
      const next = obj(change.new);
      const prev = obj(change.old);
      const side = next ?? prev;
      if (!side) throw new Invalid('push change has neither new nor old');
      const type = side.type === 'branch' ? 'branch' : side.type === 'tag' ? 'tag' : null;
      if (!type) return null; // bookmarks (Mercurial) and other kinds: not ours
      const name = str(side.name, 'name');
      const target = obj(side.target);
      return refOf(
        type,
        name,
        next
          ? { after: target?.hash, before: obj(prev?.target)?.hash, deleted: false, message: target?.message }
          : { after: null, deleted: true },
      );
    })
    .filter((r: PushRef | null): r is PushRef => r !== null);
  return several(refs);
}

// Bitbucket Server / Data Center: "repo:refs_changed" {changes: [{ref: {id, displayId, type},
// refId, fromHash, toHash, type: "ADD" | "UPDATE" | "DELETE"}]}.
function bitbucketServer(p: Record<string, unknown>): ParsedDelivery {
  if (!Array.isArray(p.changes)) throw new Invalid('changes is missing');
  if (p.changes.length > 100) throw new Invalid('too many changes in one push');
  const refs: PushRef[] = [];
  for (const c of p.changes) {
    const change = obj(c);
    if (!change) throw new Invalid('changes[] is not an object');
    const r = fromRef(str(change.refId ?? obj(change.ref)?.id, 'refId'), {
      after: change.type === 'DELETE' ? null : change.toHash,
      before: change.fromHash,
      deleted: change.type === 'DELETE',
    });
    if (r.kind === 'push') refs.push(r);
  }
  return several(refs);
}

function several(refs: (PushRef & { kind?: string })[]): ParsedDelivery {
  if (refs.length === 0) return { kind: 'ignored', reason: 'push of neither a branch nor a tag' };
  // Lead with a ref that was not deleted, so a push that deletes one branch and updates another
  // is reported (and logged) by the update.
  const sorted = refs.map(({ kind: _kind, ...r }) => r).sort((a, b) => Number(a.deleted) - Number(b.deleted));
  const [first, ...rest] = sorted;
  return rest.length ? { kind: 'push', ...first!, also: rest } : { kind: 'push', ...first! };
}

/** A GitHub/Gitea `delete` event: {ref: "<short name>", ref_type: "branch" | "tag"}. */
function deletion(p: Record<string, unknown>): ParsedDelivery {
  const type = p.ref_type === 'branch' ? 'branch' : p.ref_type === 'tag' ? 'tag' : null;
  if (!type) throw new Invalid('ref_type is not "branch" or "tag"');
  return { kind: 'push', ...refOf(type, str(p.ref, 'ref'), { after: null, deleted: true }) };
}

type RefInfo = { after: unknown; before?: unknown; deleted: boolean; peeled?: unknown; message?: unknown };

function fromRef(ref: string, info: RefInfo): ParsedDelivery {
  let type: 'branch' | 'tag';
  let name: string;
  if (ref.startsWith('refs/heads/')) {
    type = 'branch';
    name = ref.slice('refs/heads/'.length);
  } else if (ref.startsWith('refs/tags/')) {
    type = 'tag';
    name = ref.slice('refs/tags/'.length);
  } else {
    // Check it anyway: a hostile ref is worth an `invalid` (and a log line), not a quiet ignore.
    const c = checkRef(ref);
    if (!c.ok) throw new Invalid(`ref: ${c.reason}`);
    return { kind: 'ignored', reason: 'ref is neither a branch nor a tag' };
  }
  return { kind: 'push', ...refOf(type, name, info) };
}

function refOf(type: 'branch' | 'tag', name: string, info: RefInfo): PushRef {
  const c = checkRef(name);
  if (!c.ok) throw new Invalid(`${type} name: ${c.reason}`);
  const ref = `${type === 'branch' ? 'refs/heads/' : 'refs/tags/'}${name}`;
  let after: string | null = null;
  let deleted = info.deleted;
  if (info.after !== null && info.after !== undefined) {
    if (typeof info.after !== 'string' || !(SHA.test(info.after) || ZERO.test(info.after)))
      throw new Invalid('after is not a commit id');
    if (ZERO.test(info.after)) deleted = true;
    else after = info.after;
  } else if (!deleted) {
    throw new Invalid('after is missing');
  }
  if (deleted) return { ref_type: type, name, ref, after: null, deleted: true };
  if (typeof info.peeled === 'string' && SHA.test(info.peeled)) after = info.peeled;
  const out: PushRef = { ref_type: type, name, ref, after, deleted: false };
  // Only for telling ref updates apart: an odd value is dropped rather than refused.
  if (typeof info.before === 'string' && SHA.test(info.before) && !ZERO.test(info.before))
    out.before = info.before;
  const subject = subjectOf(info.message);
  if (subject) out.head_subject = subject;
  return out;
}

function subjectOf(message: unknown): string | undefined {
  if (typeof message !== 'string') return undefined;
  // Bounded and stripped of control characters (incl. ANSI escapes' ESC): it ends up in logs.
  const line = message
    .slice(0, 4096)
    .split('\n')[0]!
    .replace(/\u001b\[[0-?]*[ -/]*[@-~]/g, '')
    .replace(/[\u0000-\u001f\u007f-\u009f]/g, '')
    .trim();
  if (!line) return undefined;
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}

/** The delivery's JSON object (also from a form-encoded `payload` field), or Invalid. */
export function json(body: Uint8Array): Record<string, unknown> {
  if (body.byteLength > MAX_PAYLOAD_BYTES) throw new Invalid('payload is larger than 1 MiB');
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    throw new Invalid('payload is not UTF-8');
  }
  // GitHub and Gitea can be set to post application/x-www-form-urlencoded with the JSON in a
  // `payload` field; accept that too, so the forge's content-type setting does not matter.
  if (text.startsWith('payload=')) {
    const field = new URLSearchParams(text).get('payload');
    if (field === null) throw new Invalid('payload field is missing');
    text = field;
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Invalid('payload is not JSON');
  }
  const o = obj(value);
  if (!o) throw new Invalid('payload is not a JSON object');
  return o;
}

export function obj(v: unknown): Record<string, unknown> | null {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
}

function str(v: unknown, field: string): string {
  if (typeof v !== 'string' || v.length === 0) throw new Invalid(`${field} is missing`);
  if (v.length > 1024) throw new Invalid(`${field} is too long`);
  return v;
}
