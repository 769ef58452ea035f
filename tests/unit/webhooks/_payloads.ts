// Sample deliveries written from each forge's documented webhook format (field names, nesting,
// header set), trimmed of the repository/user objects' long tails that the parser never reads.

export const SHA_A = '0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c';
export const SHA_B = '6113728f27ae82c7b1a177c8d03f9e96e0adf246';
export const ZERO = '0000000000000000000000000000000000000000';

const ghRepo = {
  id: 186853002,
  node_id: 'MDEwOlJlcG9zaXRvcnkxODY4NTMwMDI=',
  name: 'Hello-World',
  full_name: 'Codertocat/Hello-World',
  private: true,
  owner: {
    name: 'Codertocat',
    email: '21031067+Codertocat@users.noreply.github.com',
    login: 'Codertocat',
    id: 21031067,
    type: 'User',
  },
  html_url: 'https://github.com/Codertocat/Hello-World',
  ssh_url: 'git@github.com:Codertocat/Hello-World.git',
  clone_url: 'https://github.com/Codertocat/Hello-World.git',
  default_branch: 'main',
  master_branch: 'main',
};
const ghUser = {
  login: 'Codertocat',
  id: 21031067,
  node_id: 'MDQ6VXNlcjIxMDMxMDY3',
  type: 'User',
  site_admin: false,
};
const ghCommit = (id: string, message: string) => ({
  id,
  tree_id: 'f9d2a07e9488b91af2641b26b9407fe22a451433',
  distinct: true,
  message,
  timestamp: '2019-05-15T15:20:30-05:00',
  url: `https://github.com/Codertocat/Hello-World/commit/${id}`,
  author: {
    name: 'Codertocat',
    email: '21031067+Codertocat@users.noreply.github.com',
    username: 'Codertocat',
  },
  committer: { name: 'GitHub', email: 'noreply@github.com', username: 'web-flow' },
  added: [],
  removed: [],
  modified: ['README.md'],
});

export function githubPush(ref: string, after = SHA_A, message = 'Update README.md\n\nLonger body here') {
  const deleted = /^0+$/.test(after);
  return {
    ref,
    before: SHA_B,
    after,
    repository: ghRepo,
    pusher: { name: 'Codertocat', email: '21031067+Codertocat@users.noreply.github.com' },
    sender: ghUser,
    created: false,
    deleted,
    forced: false,
    base_ref: null,
    compare: `https://github.com/Codertocat/Hello-World/compare/${SHA_B.slice(0, 12)}...${after.slice(0, 12)}`,
    commits: deleted ? [] : [ghCommit(after, message)],
    head_commit: deleted ? null : ghCommit(after, message),
  };
}

export const githubPing = {
  zen: 'Keep it logically awesome.',
  hook_id: 30,
  hook: {
    type: 'Repository',
    id: 30,
    name: 'web',
    active: true,
    events: ['push'],
    config: { content_type: 'json', insecure_ssl: '0', url: 'https://svc.example.net/webhooks/01hx' },
    updated_at: '2019-05-15T15:20:49Z',
    created_at: '2019-05-15T15:20:49Z',
  },
  repository: ghRepo,
  sender: ghUser,
};

export const githubHeaders = (event: string) => ({
  'X-GitHub-Event': event,
  'X-GitHub-Delivery': '72d3162e-cc78-11e3-81ab-4c9367dc0958',
  'X-GitHub-Hook-ID': '292430182',
  'X-GitHub-Hook-Installation-Target-ID': '79929171',
  'X-GitHub-Hook-Installation-Target-Type': 'repository',
  'User-Agent': 'GitHub-Hookshot/044aadd',
  'Content-Type': 'application/json',
});

const giteaUser = {
  id: 1,
  login: 'gitea',
  full_name: 'Gitea',
  email: 'someone@gitea.io',
  avatar_url: 'https://gitea.example/avatars/1',
  username: 'gitea',
};
const giteaCommit = (id: string, message: string) => ({
  id,
  message,
  url: `http://localhost:3000/gitea/webhooks/commit/${id}`,
  author: { name: 'Gitea', email: 'someone@gitea.io', username: 'gitea' },
  committer: { name: 'Gitea', email: 'someone@gitea.io', username: 'gitea' },
  verification: null,
  timestamp: '2017-03-13T13:52:11-04:00',
  added: [],
  removed: [],
  modified: ['README.md'],
});

export function giteaPush(
  ref: string,
  after = 'bffeb74224043ba2feb48d137756c8a9331c449a',
  message = 'Webhooks Yay!\n',
) {
  const deleted = /^0+$/.test(after);
  return {
    ref,
    before: '28e1879d029cb852e4844d9c718537df08844e03',
    after,
    compare_url: `http://localhost:3000/gitea/webhooks/compare/28e1879d029cb852e4844d9c718537df08844e03...${after}`,
    commits: deleted ? [] : [giteaCommit(after, message)],
    total_commits: deleted ? 0 : 1,
    head_commit: deleted ? null : giteaCommit(after, message),
    repository: {
      id: 140,
      owner: giteaUser,
      name: 'webhooks',
      full_name: 'gitea/webhooks',
      private: true,
      fork: false,
      html_url: 'http://localhost:3000/gitea/webhooks',
      ssh_url: 'ssh://gitea@localhost:2222/gitea/webhooks.git',
      clone_url: 'http://localhost:3000/gitea/webhooks.git',
      default_branch: 'master',
    },
    pusher: giteaUser,
    sender: giteaUser,
  };
}

export function giteaDelete(ref: string, refType: 'branch' | 'tag') {
  return {
    ref,
    ref_type: refType,
    pusher_type: 'user',
    repository: giteaPush('refs/heads/x').repository,
    sender: giteaUser,
  };
}

/** Gitea sends its own headers plus Gogs' and GitHub's, with a SHA-1 X-Hub-Signature. */
export const giteaHeaders = (
  event: string,
  sig: string,
  sha1 = 'sha1=0000000000000000000000000000000000000000',
) => ({
  'X-GitHub-Delivery': 'f6266f16-1bf3-46a5-9ea4-602e06ead473',
  'X-GitHub-Event': event,
  'X-GitHub-Event-Type': event,
  'X-Gitea-Delivery': 'f6266f16-1bf3-46a5-9ea4-602e06ead473',
  'X-Gitea-Event': event,
  'X-Gitea-Event-Type': event,
  'X-Gitea-Signature': sig,
  'X-Gogs-Delivery': 'f6266f16-1bf3-46a5-9ea4-602e06ead473',
  'X-Gogs-Event': event,
  'X-Gogs-Event-Type': event,
  'X-Gogs-Signature': sig,
  'X-Hub-Signature': sha1,
  'X-Hub-Signature-256': `sha256=${sig}`,
  'Content-Type': 'application/json',
});

/** Forgejo adds X-Forgejo-* on top of everything Gitea sends. */
export const forgejoHeaders = (event: string, sig: string) => ({
  ...giteaHeaders(event, sig),
  'X-Forgejo-Delivery': '0b7d6a5c-7c1f-4a0e-9f0e-3c1d5b0e2a11',
  'X-Forgejo-Event': event,
  'X-Forgejo-Event-Type': event,
  'X-Forgejo-Signature': sig,
});

const glProject = {
  id: 15,
  name: 'Diaspora',
  description: '',
  web_url: 'http://example.com/mike/diaspora',
  avatar_url: null,
  git_ssh_url: 'git@example.com:mike/diaspora.git',
  git_http_url: 'http://example.com/mike/diaspora.git',
  namespace: 'Mike',
  visibility_level: 0,
  path_with_namespace: 'mike/diaspora',
  default_branch: 'master',
  homepage: 'http://example.com/mike/diaspora',
  url: 'git@example.com:mike/diaspora.git',
  ssh_url: 'git@example.com:mike/diaspora.git',
  http_url: 'http://example.com/mike/diaspora.git',
};
const glRepository = {
  name: 'Diaspora',
  url: 'git@example.com:mike/diaspora.git',
  description: '',
  homepage: 'http://example.com/mike/diaspora',
  git_http_url: 'http://example.com/mike/diaspora.git',
  git_ssh_url: 'git@example.com:mike/diaspora.git',
  visibility_level: 0,
};

export function gitlabPush(ref: string, after = 'da1560886d4f094c3e6c9ef40349f7d38b5d27d7') {
  const deleted = /^0+$/.test(after);
  return {
    object_kind: 'push',
    event_name: 'push',
    before: '95790bf891e76fee5e1747ab589903a6a1f80f22',
    after,
    ref,
    ref_protected: true,
    checkout_sha: deleted ? null : after,
    message: null,
    user_id: 4,
    user_name: 'John Smith',
    user_username: 'jsmith',
    user_email: 'john@example.com',
    user_avatar:
      'https://s.gravatar.com/avatar/d4c74594d841139328695756648b6bd6?s=8://s.gravatar.com/avatar/d4c74594d841139328695756648b6bd6?s=80',
    project_id: 15,
    project: glProject,
    commits: deleted
      ? []
      : [
          {
            id: 'b6568db1bc1dcd7f8b4d5a946b0b91f9dacd7327',
            message:
              'Update Catalan translation to e38cb41.\n\nSee https://gitlab.com/gitlab-org/gitlab for more information',
            title: 'Update Catalan translation to e38cb41.',
            timestamp: '2011-12-12T14:27:31+02:00',
            url: 'http://example.com/mike/diaspora/commit/b6568db1bc1dcd7f8b4d5a946b0b91f9dacd7327',
            author: { name: 'Jordi Mallach', email: 'jordi@softcatala.org' },
            added: ['CHANGELOG'],
            modified: ['app/controller/application.rb'],
            removed: [],
          },
          {
            id: after,
            message: 'fixed readme',
            title: 'fixed readme',
            timestamp: '2012-01-03T23:36:29+02:00',
            url: `http://example.com/mike/diaspora/commit/${after}`,
            author: { name: 'GitLab dev user', email: 'gitlabdev@dv6700.(none)' },
            added: ['CHANGELOG'],
            modified: ['app/controller/application.rb'],
            removed: [],
          },
        ],
    total_commits_count: deleted ? 0 : 4,
    repository: glRepository,
  };
}

export function gitlabTagPush(
  ref: string,
  after = '82b3d5ae55f7080f1e6022629cdb57bfae7cccc7',
  checkout: string | null = after,
) {
  return {
    object_kind: 'tag_push',
    event_name: 'tag_push',
    before: ZERO,
    after,
    ref,
    ref_protected: true,
    checkout_sha: checkout,
    message: 'Tag message',
    user_id: 1,
    user_name: 'John Smith',
    user_username: 'jsmith',
    user_avatar:
      'https://s.gravatar.com/avatar/d4c74594d841139328695756648b6bd6?s=8://s.gravatar.com/avatar/d4c74594d841139328695756648b6bd6?s=80',
    project_id: 1,
    project: glProject,
    commits: [],
    total_commits_count: 0,
    repository: glRepository,
  };
}

export const gitlabHeaders = (event: string, token: string) => ({
  'X-Gitlab-Event': event,
  'X-Gitlab-Token': token,
  'X-Gitlab-Instance': 'https://gitlab.example.com',
  'X-Gitlab-Webhook-UUID': '13792a34-cac6-4fda-95a8-c58e00a3954e',
  'X-Gitlab-Event-UUID': '9cebe914-4827-408f-b014-cfa23a47a35f',
  'Idempotency-Key': 'f5e5f430-f57b-4e6e-9fac-d9128cd7232f',
  'User-Agent': 'GitLab/17.0.0',
  'Content-Type': 'application/json',
});

const bbActor = {
  type: 'user',
  display_name: 'Emma',
  uuid: '{a54f16da-24e9-4d7f-a3a7-b1ba2cd98aa3}',
  account_id: '557058:c0b72ad0-1cb5-4018-9cdc-0cde8492c443',
  nickname: 'emma',
};
const bbTarget = (hash: string, message: string) => ({
  type: 'commit',
  hash,
  author: { type: 'author', raw: 'Emma <emma@example.com>', user: bbActor },
  message,
  date: '2015-06-09T03:34:49+00:00',
  parents: [{ type: 'commit', hash: '1e65c05c1d5171631d92438a13901ca7dae9618c' }],
  links: { self: { href: `https://api.bitbucket.org/2.0/repositories/team/repo/commit/${hash}` } },
});
type BbRef = { type: 'branch' | 'tag'; name: string; hash: string; message?: string } | null;

export function bitbucketPush(changes: { next: BbRef; prev: BbRef }[]) {
  const side = (r: BbRef) =>
    r && {
      type: r.type,
      name: r.name,
      target: bbTarget(r.hash, r.message ?? 'new stuff\n'),
      links: { html: { href: `https://bitbucket.org/team/repo/branch/${r.name}` } },
    };
  return {
    actor: bbActor,
    repository: {
      type: 'repository',
      full_name: 'team/repo',
      name: 'repo',
      uuid: '{b5fb3d8c-3c7a-4c2b-9a75-ac8b1c6e5a54}',
      is_private: true,
      scm: 'git',
      links: { html: { href: 'https://bitbucket.org/team/repo' } },
    },
    push: {
      changes: changes.map((c) => ({
        new: side(c.next),
        old: side(c.prev),
        links: {},
        created: c.prev === null,
        forced: false,
        closed: c.next === null,
        commits: c.next ? [bbTarget(c.next.hash, c.next.message ?? 'new stuff\n')] : [],
        truncated: false,
      })),
    },
  };
}

export const bitbucketHeaders = (event: string, sig: string) => ({
  'X-Event-Key': event,
  'X-Hook-UUID': 'cb5c3b1f-2b5a-4d1d-8b1e-8f7c3a2e1d00',
  'X-Request-UUID': 'e7a9b1c2-3d4e-4f50-8a6b-7c8d9e0f1a2b',
  'X-Attempt-Number': '1',
  'X-Hub-Signature': sig,
  'User-Agent': 'Bitbucket-Webhooks/2.0',
  'Content-Type': 'application/json',
});

export const enc = (v: unknown) => new TextEncoder().encode(typeof v === 'string' ? v : JSON.stringify(v));

// Pull/merge request events, trimmed from each forge's documented payload.
const ghFork = {
  ...ghRepo,
  id: 1,
  name: 'Hello-World',
  full_name: 'Mallory/Hello-World',
  clone_url: 'https://github.com/Mallory/Hello-World.git',
};

export function githubPullRequest(
  action: string,
  opts: { number?: number; head?: string; sha?: string; base?: string; fork?: boolean } = {},
) {
  const number = opts.number ?? 2;
  return {
    action,
    number,
    pull_request: {
      url: `https://api.github.com/repos/Codertocat/Hello-World/pulls/${number}`,
      id: 279147437,
      number,
      state: action === 'closed' ? 'closed' : 'open',
      title: 'Update the README with new information.',
      user: ghUser,
      merged: false,
      head: {
        label: 'Codertocat:changes',
        ref: opts.head ?? 'changes',
        sha: opts.sha ?? SHA_A,
        user: ghUser,
        repo: opts.fork ? ghFork : ghRepo,
      },
      base: { label: 'Codertocat:main', ref: opts.base ?? 'main', sha: SHA_B, user: ghUser, repo: ghRepo },
    },
    repository: ghRepo,
    sender: ghUser,
  };
}

const giteaRepo = {
  id: 1,
  owner: { id: 1, login: 'gitea', username: 'gitea' },
  name: 'webhooks',
  full_name: 'gitea/webhooks',
  clone_url: 'http://localhost:3000/gitea/webhooks.git',
  default_branch: 'main',
};

export function giteaPullRequest(
  action: string,
  opts: { number?: number; head?: string; fork?: boolean } = {},
) {
  const number = opts.number ?? 1;
  const headRepo = opts.fork
    ? {
        ...giteaRepo,
        id: 2,
        owner: { id: 2, login: 'mallory', username: 'mallory' },
        full_name: 'mallory/webhooks',
        clone_url: 'http://localhost:3000/mallory/webhooks.git',
      }
    : giteaRepo;
  return {
    action,
    number,
    pull_request: {
      id: 1,
      number,
      title: 'Add a feature',
      state: action === 'closed' ? 'closed' : 'open',
      merged: false,
      head: {
        label: opts.head ?? 'feature',
        ref: opts.head ?? 'feature',
        sha: SHA_A,
        repo_id: headRepo.id,
        repo: headRepo,
      },
      base: { label: 'main', ref: 'main', sha: SHA_B, repo_id: 1, repo: giteaRepo },
    },
    repository: giteaRepo,
    sender: { id: 1, login: 'gitea' },
  };
}

export function gitlabMergeRequest(
  action: string,
  opts: { iid?: number; source?: string; target?: string; fork?: boolean; oldrev?: boolean } = {},
) {
  return {
    object_kind: 'merge_request',
    event_type: 'merge_request',
    user: { id: 1, name: 'Administrator', username: 'root' },
    project: {
      id: 1,
      name: 'Gitlab Test',
      path_with_namespace: 'gitlabhq/gitlab-test',
      git_http_url: 'http://example.com/gitlabhq/gitlab-test.git',
    },
    object_attributes: {
      id: 99,
      iid: opts.iid ?? 1,
      title: 'MS-Viewport',
      target_branch: opts.target ?? 'master',
      source_branch: opts.source ?? 'ms-viewport',
      source_project_id: opts.fork ? 14 : 1,
      target_project_id: 1,
      state: action === 'merge' ? 'merged' : action === 'close' ? 'closed' : 'opened',
      action,
      ...(opts.oldrev ? { oldrev: SHA_B } : {}),
      source: {
        name: 'Awesome Project',
        git_http_url: opts.fork
          ? 'http://example.com/awesome_space/awesome_project.git'
          : 'http://example.com/gitlabhq/gitlab-test.git',
      },
      last_commit: { id: SHA_A, message: 'fixed readme', title: 'Update file README.md' },
    },
  };
}

export function bitbucketPullRequest(opts: { id?: number; source?: string; fork?: boolean } = {}) {
  const repo = {
    type: 'repository',
    full_name: 'team/project',
    name: 'project',
    links: { html: { href: 'https://bitbucket.org/team/project' } },
  };
  const forkRepo = {
    ...repo,
    full_name: 'mallory/project',
    links: { html: { href: 'https://bitbucket.org/mallory/project' } },
  };
  return {
    pullrequest: {
      id: opts.id ?? 3,
      title: 'Add the feature',
      state: 'OPEN',
      source: {
        branch: { name: opts.source ?? 'feature/x' },
        commit: { hash: SHA_A.slice(0, 12) },
        repository: opts.fork ? forkRepo : repo,
      },
      destination: { branch: { name: 'main' }, commit: { hash: SHA_B.slice(0, 12) }, repository: repo },
    },
    repository: repo,
    actor: { display_name: 'Someone' },
  };
}
