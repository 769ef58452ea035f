// git on the host never runs a command that a repository, a tampered working copy or the service
// user's own configuration asks for; ssh never uses the service user's keys, agent or config.
// Real git CLI against a real git daemon on loopback.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { appendFile, chmod, mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGitServer, type GitServer } from '../_support/gitserver.js';
import { checkout } from '#lib/deploy/workdir.js';
import { runGit, shallowClone, withDeployKey } from '#lib/git/index.js';
import { generateDeployKey } from '#lib/keys/ssh.js';

let srv: GitServer;
let root = '';
const saved = {
  PATH: process.env.PATH,
  HOME: process.env.HOME,
  XDG_CONFIG_HOME: process.env.XDG_CONFIG_HOME,
};

before(async () => {
  srv = await startGitServer();
  root = await mkdtemp(join(tmpdir(), 'svc-git-hostile-'));
});

after(async () => {
  Object.assign(process.env, saved);
  for (const [k, v] of Object.entries(saved)) if (v === undefined) delete process.env[k];
  await srv.stop();
  await rm(root, { recursive: true, force: true });
});

const uniq = () => randomBytes(4).toString('hex');
const exists = (p: string) =>
  stat(p).then(
    () => true,
    () => false,
  );

type Tamper = (git: string, marker: string) => Promise<void>;

// What a container with the working copy mounted could write into its .git (before the fix,
// `./:/app` mounted exactly that).
const VECTORS: [string, Tamper][] = [
  [
    'filter driver in .git/config with .git/info/attributes',
    async (g, m) => {
      await appendFile(join(g, 'config'), `[filter "evil"]\n\tsmudge = touch ${m}; cat\n\tclean = cat\n`);
      await mkdir(join(g, 'info'), { recursive: true });
      await writeFile(join(g, 'info', 'attributes'), '* filter=evil\n');
    },
  ],
  [
    'filter driver through include.path',
    async (g, m) => {
      await writeFile(join(g, 'extra'), `[filter "inc"]\n\tsmudge = touch ${m}; cat\n`);
      await appendFile(join(g, 'config'), '[include]\n\tpath = extra\n');
      await mkdir(join(g, 'info'), { recursive: true });
      await writeFile(join(g, 'info', 'attributes'), '* filter=inc\n');
    },
  ],
  [
    'core.gitProxy for git://',
    async (g, m) => {
      await appendFile(join(g, 'config'), `[core]\n\tgitProxy = touch ${m}\n`);
    },
  ],
  [
    'core.fsmonitor',
    async (g, m) => {
      await appendFile(join(g, 'config'), `[core]\n\tfsmonitor = touch ${m}\n`);
    },
  ],
  [
    'hooks with core.hooksPath',
    async (g, m) => {
      await mkdir(join(g, 'myhooks'), { recursive: true });
      for (const h of ['post-checkout', 'reference-transaction', 'post-merge']) {
        await writeFile(join(g, 'myhooks', h), `#!/bin/sh\ntouch ${m}\n`);
        await chmod(join(g, 'myhooks', h), 0o755);
      }
      await appendFile(join(g, 'config'), `[core]\n\thooksPath = ${join(g, 'myhooks')}\n`);
    },
  ],
  [
    '.git/config replaced by a symlink',
    async (g, m) => {
      const other = join(g, '..', '..', `evil-config-${uniq()}`);
      await writeFile(other, `${await readFile(join(g, 'config'), 'utf8')}[core]\n\tgitProxy = touch ${m}\n`);
      await rm(join(g, 'config'));
      await symlink(other, join(g, 'config'));
    },
  ],
  [
    'objects/info/alternates to another repository',
    async (g) => {
      await mkdir(join(g, 'objects', 'info'), { recursive: true });
      await writeFile(join(g, 'objects', 'info', 'alternates'), `${join(srv.base)}\n`);
    },
  ],
];

test('a working copy whose .git was tampered with is never reused: no command runs, a fresh clone replaces it', async () => {
  const repo = `hostile-${uniq()}`;
  const work = join(root, 'work');
  let n = 0;
  await srv.commit(repo, { 'a.txt': 'v0\n', 'b.txt': 'b\n' });
  const lines: string[] = [];
  const opts = (dep: string) => ({
    workRoot: work,
    appId: 'app1',
    deploymentId: dep,
    url: srv.url(repo),
    ref: 'main',
    env: {},
    timeoutMs: 60_000,
    maxBytes: 64 * 1024 * 1024,
    log: (l: string) => lines.push(l),
  });
  const first = await checkout(opts(`d${n++}`));
  assert.equal(first.fresh, true);
  const pristine = await readFile(join(first.dir, '.git', 'config'), 'utf8');

  for (const [what, tamper] of VECTORS) {
    const marker = join(root, `marker-${uniq()}`);
    await tamper(join(first.dir, '.git'), marker);
    await srv.commit(repo, { 'a.txt': `${what}\n`, 'b.txt': `${what} b\n` });
    lines.length = 0;
    const co = await checkout(opts(`d${n++}`));
    assert.equal(await exists(marker), false, `${what}: git ran the command the working copy asked for`);
    assert.equal(co.fresh, true, `${what}: a tampered working copy must be replaced`);
    assert.ok(
      lines.some((l) => /not the one the control plane wrote/.test(l)),
      `${what}: ${lines.join(' | ')}`,
    );
    assert.equal(await readFile(join(co.dir, 'a.txt'), 'utf8'), `${what}\n`);
    assert.equal(
      await readFile(join(co.dir, '.git', 'config'), 'utf8'),
      pristine,
      `${what}: the config is ours again`,
    );
  }
  // Untouched, the working copy is reused (a fetch, not a clone).
  await srv.commit(repo, { 'a.txt': 'last\n' });
  const again = await checkout(opts(`d${n++}`));
  assert.equal(again.fresh, false);
  assert.equal(await readFile(join(again.dir, 'a.txt'), 'utf8'), 'last\n');
});

test('git reads no configuration of the service user: ~/.gitconfig and XDG config are never consulted', async () => {
  const marker = join(root, `marker-home-${uniq()}`);
  const home = join(root, `home-${uniq()}`);
  await mkdir(join(home, '.config', 'git'), { recursive: true });
  const evil = `[filter "evil"]\n\tsmudge = touch ${marker}; cat\n\tclean = cat\n\trequired = true\n[core]\n\tattributesFile = ${join(home, 'attrs')}\n`;
  await writeFile(join(home, '.gitconfig'), evil);
  await writeFile(join(home, '.config', 'git', 'config'), evil);
  await writeFile(join(home, 'attrs'), '* filter=evil\n');
  process.env.HOME = home;
  process.env.XDG_CONFIG_HOME = join(home, '.config');
  try {
    const repo = `attrs-${uniq()}`;
    // The repository asks for the driver too; without a definition of ours it is inert.
    await srv.commit(repo, { '.gitattributes': '* filter=evil\n', 'a.txt': 'a\n' });
    const dir = join(root, `clone-${uniq()}`);
    await shallowClone({ url: srv.url(repo), ref: 'main', dir });
    assert.equal(await readFile(join(dir, 'a.txt'), 'utf8'), 'a\n');
    assert.equal(await exists(marker), false, "a filter from the service user's git config ran");
  } finally {
    process.env.HOME = saved.HOME;
    if (saved.XDG_CONFIG_HOME === undefined) delete process.env.XDG_CONFIG_HOME;
    else process.env.XDG_CONFIG_HOME = saved.XDG_CONFIG_HOME;
  }
});

/** Puts a fake `ssh` first on PATH that records its arguments, runs fn, returns the arguments. */
async function sshArgs(fn: () => Promise<unknown>): Promise<string[]> {
  const bin = join(root, `bin-${uniq()}`);
  const log = join(bin, 'args');
  await mkdir(bin);
  await writeFile(
    join(bin, 'ssh'),
    `#!/bin/sh\nfor a in "$@"; do printf '%s\\n' "$a"; done > ${log}\nexit 1\n`,
  );
  await chmod(join(bin, 'ssh'), 0o755);
  process.env.PATH = `${bin}:${saved.PATH}`;
  try {
    await fn().catch(() => {});
  } finally {
    process.env.PATH = saved.PATH;
  }
  return (await readFile(log, 'utf8')).split('\n').slice(0, -1);
}

function options(args: string[]): string[] {
  return args.flatMap((a, i) => (args[i - 1] === '-o' ? [a] : []));
}

test('without a deploy key, ssh gets no agent, no ~/.ssh key, no ssh_config, no proxy, and "--" before the host', async () => {
  const args = await sshArgs(() =>
    runGit(['ls-remote', '--', 'ssh://git@127.0.0.1:2222/srv/repo.git'], { timeoutMs: 20_000 }),
  );
  assert.deepEqual(args.slice(0, 2), ['-F', '/dev/null'], args.join(' '));
  const o = options(args);
  for (const want of [
    'IdentityFile=none',
    'IdentitiesOnly=yes',
    'IdentityAgent=none',
    'ProxyCommand=none',
    'PermitLocalCommand=no',
    'BatchMode=yes',
    'GlobalKnownHostsFile=/dev/null',
  ]) {
    assert.ok(o.includes(want), `${want} in ${args.join(' ')}`);
  }
  assert.ok(
    o.some((x) => x.startsWith('UserKnownHostsFile=/') && !x.includes('/root/') && !x.includes('/.ssh/')),
    'known hosts of our own',
  );
  const host = args.indexOf('git@127.0.0.1');
  assert.ok(host > 0 && args[host - 1] === '--', `"--" before the host: ${args.join(' ')}`);
  assert.equal(args[host - 3], '-p');
  assert.equal(args.at(-1), "git-upload-pack '/srv/repo.git'");
});

test('with a deploy key, ssh uses that key alone, no proxy, and "--" before the host', async () => {
  const key = generateDeployKey('svc-test');
  const known = join(root, `ssh-${uniq()}`, 'known_hosts');
  let keyFile = '';
  const args = await sshArgs(() =>
    withDeployKey(key.privateKey, known, (env, paths) => {
      keyFile = paths.keyFile;
      return runGit(['ls-remote', '--', 'git@127.0.0.1:srv/repo.git'], { env, timeoutMs: 20_000 });
    }),
  );
  const i = args.indexOf('-i');
  assert.equal(args[i + 1], keyFile);
  const o = options(args);
  for (const want of [
    'IdentitiesOnly=yes',
    'IdentityAgent=none',
    'ProxyCommand=none',
    `UserKnownHostsFile=${known}`,
  ])
    assert.ok(o.includes(want), `${want} in ${args.join(' ')}`);
  assert.equal(args[args.indexOf('git@127.0.0.1') - 1], '--');
});
