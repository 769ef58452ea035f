// Reads the forges' pull/merge request payloads into one small shape: what happened (opened or
// updated, or closed), its number, the branch and commit to build, the target branch, and whether
// it comes from a fork. Runs only after verifyDelivery accepted the delivery; anything odd in a
// validly signed body is `invalid`. Field names as each forge documents them:
// - GitHub `pull_request`: {action, number, pull_request: {title, head: {ref, sha, repo}, base: {ref, repo}}}
// - Gitea/Forgejo `pull_request` (and `pull_request_sync` for pushes to its branch): the same
//   shape, with `synchronized` for an update.
// - GitLab `Merge Request Hook`: {object_kind: "merge_request", object_attributes: {iid, title,
//   source_branch, target_branch, source_project_id, target_project_id, last_commit: {id}, action,
//   source: {git_http_url}}}.
// - Bitbucket Cloud `pullrequest:created|updated|fulfilled|rejected`: {pullrequest: {id, title,
//   source: {branch: {name}, commit: {hash}, repository: {full_name}}, destination: {...}}}.
import { checkRef, checkRepoUrl } from '../git/validate.js';
import type { Provider } from './verify.js';
import { Invalid, json, obj } from './payload.js';

export interface PullRequest {
  kind: 'pull_request';
  /** `deploy`: opened, updated or reopened; `remove`: closed or merged. */
  action: 'deploy' | 'remove';
  number: number;
  title: string | null;
  /** The branch to build (the head or source branch). */
  branch: string;
  /** Its head commit when the forge says (Bitbucket sends an abbreviated one). */
  commit: string | null;
  /** The branch it would merge into. */
  target: string;
  fork: boolean;
  /** The fork's repository to clone, when it is one and the forge names it. */
  repo_url: string | null;
}

export type ParsedPullRequest =
  PullRequest | { kind: 'ignored'; reason: string } | { kind: 'invalid'; reason: string };

/** Whether an event of this provider is a pull/merge request event (then parsePullRequest reads it). */
export function isPullRequestEvent(provider: Provider, event: string): boolean {
  switch (provider) {
    case 'github':
      return event === 'pull_request';
    case 'gitea':
      return event === 'pull_request' || event === 'pull_request_sync';
    case 'gitlab':
      return event === 'Merge Request Hook';
    case 'bitbucket':
      return event.startsWith('pullrequest:');
    default:
      return false;
  }
}

export function parsePullRequest(provider: Provider, event: string, body: Uint8Array): ParsedPullRequest {
  try {
    const p = json(body);
    switch (provider) {
      case 'github':
      case 'gitea':
        return githubStyle(event, p);
      case 'gitlab':
        return gitlab(p);
      case 'bitbucket':
        return bitbucket(event, p);
      default:
        return { kind: 'invalid', reason: 'unknown provider' };
    }
  } catch (e) {
    if (e instanceof Invalid) return { kind: 'invalid', reason: e.message };
    throw e;
  }
}

const DEPLOY_GITHUB = new Set(['opened', 'reopened', 'synchronize', 'synchronized']);

function githubStyle(event: string, p: Record<string, unknown>): ParsedPullRequest {
  const action = typeof p.action === 'string' ? p.action : '';
  const pr = obj(p.pull_request);
  if (!pr) throw new Invalid('pull_request is missing');
  const verb =
    event === 'pull_request_sync' || DEPLOY_GITHUB.has(action)
      ? 'deploy'
      : action === 'closed'
        ? 'remove'
        : null;
  if (!verb) return { kind: 'ignored', reason: `pull request action "${action}" changes no preview` };
  const head = obj(pr.head);
  const base = obj(pr.base);
  if (!head || !base) throw new Invalid('pull_request.head or .base is missing');
  const headRepo = obj(head.repo);
  const baseRepo = obj(base.repo) ?? obj(p.repository);
  // A head repository that is gone (a deleted fork) or named differently is a fork.
  const fork = !headRepo || !baseRepo || headRepo.full_name !== baseRepo.full_name;
  return make(
    verb,
    p.number ?? pr.number,
    pr.title,
    head.ref,
    head.sha,
    base.ref,
    fork,
    fork && headRepo ? headRepo.clone_url : null,
  );
}

function gitlab(p: Record<string, unknown>): ParsedPullRequest {
  if (p.object_kind !== 'merge_request') throw new Invalid('object_kind is not "merge_request"');
  const a = obj(p.object_attributes);
  if (!a) throw new Invalid('object_attributes is missing');
  const action = typeof a.action === 'string' ? a.action : '';
  const verb =
    action === 'open' || action === 'reopen' || action === 'update'
      ? 'deploy'
      : action === 'close' || action === 'merge'
        ? 'remove'
        : null;
  if (!verb)
    return { kind: 'ignored', reason: `merge request action "${action || 'none'}" changes no preview` };
  // An update that moved no commit (a title or label change) carries no `oldrev`: nothing to rebuild.
  if (action === 'update' && typeof a.oldrev !== 'string')
    return { kind: 'ignored', reason: 'merge request updated without new commits' };
  const fork = a.source_project_id !== a.target_project_id;
  return make(
    verb,
    a.iid,
    a.title,
    a.source_branch,
    obj(a.last_commit)?.id,
    a.target_branch,
    fork,
    fork ? obj(a.source)?.git_http_url : null,
  );
}

function bitbucket(event: string, p: Record<string, unknown>): ParsedPullRequest {
  const what = event.slice('pullrequest:'.length);
  const verb =
    what === 'created' || what === 'updated'
      ? 'deploy'
      : what === 'fulfilled' || what === 'rejected'
        ? 'remove'
        : null;
  if (!verb) return { kind: 'ignored', reason: `pull request event "${event}" changes no preview` };
  const pr = obj(p.pullrequest);
  if (!pr) throw new Invalid('pullrequest is missing');
  const source = obj(pr.source);
  const dest = obj(pr.destination);
  if (!source || !dest) throw new Invalid('pullrequest.source or .destination is missing');
  const srcRepo = obj(source.repository);
  const dstRepo = obj(dest.repository);
  const fork = !srcRepo || !dstRepo || srcRepo.full_name !== dstRepo.full_name;
  // Bitbucket names a fork by its web page; its clone URL is that page's address with .git.
  const html = obj(obj(srcRepo?.links)?.html)?.href;
  return make(
    verb,
    pr.id,
    pr.title,
    obj(source.branch)?.name,
    obj(source.commit)?.hash,
    obj(dest.branch)?.name,
    fork,
    fork && typeof html === 'string' ? `${html}.git` : null,
  );
}

function make(
  action: 'deploy' | 'remove',
  number: unknown,
  title: unknown,
  branch: unknown,
  commit: unknown,
  target: unknown,
  fork: boolean,
  repoUrl: unknown,
): PullRequest {
  if (typeof number !== 'number' || !Number.isInteger(number) || number < 1 || number > 999_999_999)
    throw new Invalid('the pull request number is missing');
  const b = refName(branch, 'head branch');
  const t = refName(target, 'target branch');
  let sha: string | null = null;
  if (commit !== undefined && commit !== null) {
    if (typeof commit !== 'string' || !/^[0-9a-f]{7,64}$/.test(commit))
      throw new Invalid('the head commit is not a commit id');
    sha = commit;
  }
  let repo: string | null = null;
  if (typeof repoUrl === 'string' && repoUrl) {
    const v = checkRepoUrl(repoUrl);
    if (!v.ok) throw new Invalid(`the fork's repository: ${v.reason}`);
    repo = repoUrl;
  }
  return {
    kind: 'pull_request',
    action,
    number,
    title: cleanTitle(title),
    branch: b,
    commit: sha,
    target: t,
    fork,
    repo_url: repo,
  };
}

function refName(v: unknown, what: string): string {
  if (typeof v !== 'string' || !v) throw new Invalid(`${what} is missing`);
  const c = checkRef(v);
  if (!c.ok) throw new Invalid(`${what}: ${c.reason}`);
  return v;
}

function cleanTitle(v: unknown): string | null {
  if (typeof v !== 'string') return null;
  const line = v
    .slice(0, 1024)
    .split('\n')[0]!
    .replace(/[\u0000-\u001f\u007f-\u009f]/g, '')
    .trim();
  return line ? line.slice(0, 200) : null;
}
