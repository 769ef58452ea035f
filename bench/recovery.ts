// npm run bench:recovery [-- --apps 5 --concurrency N --rebuild] — disaster recovery, as an operator lives it:
//   instance A (`svc serve`, its own process and data directory) runs --apps N small web apps (image
//   source, a busybox httpd serving a page its env sets), each answering on its container address;
//   one instance backup to local disk, the artifact copied out of A's data directory; A stops and
//   every engine object of A goes (containers, volumes, networks, by its svc.instance label; images
//   stay, so recovery redeploys each app from its image). Then, on the clock:
//   `svc restore-instance <artifact> --key <hex>` on a fresh data directory, instance B starts on the
//   same master key, and each app is polled on its new container address until it serves its own page.
// Printed: the restore-instance command's time, B's start to listening, B's start to the first app
// answering, the total to all N answering, each app's time, and when B's recovery report finished
// (later than the answers: a redeploy holds the new container for its 5 s settle before it succeeds).
// The recovery redeploys go through the deployment queue: --concurrency N sets the instance's deploy
// concurrency on A (kept in the backup, so B has it too); without it the instance's default runs.
// --rebuild: one more app comes from a git repository (a local git daemon) and its built images are
// removed with A's objects, so recovery has to clone and build it again (the image-source apps could
// not come back without their image: there is no registry to pull from).
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { copyFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import Docker from 'dockerode';
import { arg } from './_args.js';
import { Client, ADMIN, TEST_MASTER_KEY } from '../tests/_support/server.js';
import { CLI, cleanEnv, serve, type Served } from '../tests/_support/cli.js';
import { startGitServer, type GitServer } from '../tests/_support/gitserver.js';
import { BASE_IMAGE, DOCKER_SOCKET, ensureBaseImage } from '../tests/_support/docker.js';
import { webRepo } from '../tests/engine/_deploy.js';

const sh = promisify(execFile);
const APPS = arg('--apps', 5);
const REBUILD = process.argv.includes('--rebuild');
const CONCURRENCY = process.argv.includes('--concurrency') ? arg('--concurrency', 1) : null;
const WEB_IMAGE = `svc-bench/recovery-web:${randomBytes(4).toString('hex')}`;
const docker = new Docker({ socketPath: DOCKER_SOCKET });
const sec = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

async function until<T>(
  what: string,
  fn: () => Promise<T | null>,
  timeoutMs: number,
  everyMs = 100,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== null) return v;
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

async function adminClient(url: string, dataDir: string): Promise<Client> {
  const c = new Client(url);
  const token = (await readFile(join(dataDir, 'setup.token'), 'utf8')).trim();
  const s = await c.req('POST', '/api/setup/admin', { token, ...ADMIN });
  if (s.status !== 201) throw new Error(`setup failed: ${s.status} ${s.text}`);
  const r = await c.req('POST', '/api/auth/login', ADMIN);
  if (r.status !== 200) throw new Error(`login failed: ${r.status} ${r.text}`);
  const up = await c.req('POST', '/api/auth/step-up', { password: ADMIN.password });
  if (up.status !== 200) throw new Error(`step-up failed: ${up.status} ${up.text}`);
  return c;
}

async function deployed(c: Client, appId: string, depId: string): Promise<void> {
  await until(
    'deployment',
    async () => {
      const d = (await c.req('GET', `/api/apps/${appId}/deployments/${depId}`)).body.deployment;
      if (['failed', 'canceled', 'interrupted'].includes(d.status))
        throw new Error(`deployment ${d.status}: ${d.error}`);
      return d.status === 'succeeded' ? d : null;
    },
    300_000,
    200,
  );
}

/** The page each running app serves on its container address, by app name (one engine listing). */
async function pages(instanceId: string, names: Set<string>): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  const cts = await docker.listContainers({
    filters: { label: [`svc.instance=${instanceId}`], status: ['running'] },
  });
  await Promise.all(
    cts.map(async (ct) => {
      const name = ct.Labels['svc.app'];
      const ip = Object.values(ct.NetworkSettings?.Networks ?? {}).find((n) => n.IPAddress)?.IPAddress;
      if (!name || !names.has(name) || !ip) return;
      try {
        const r = await fetch(`http://${ip}:8080/`, { signal: AbortSignal.timeout(1000) });
        if (r.ok) found.set(name, (await r.text()).trim());
      } catch {
        /* not yet */
      }
    }),
  );
  return found;
}

/** Everything on the engine labelled with this instance: what a lost server takes with it. */
async function wipeInstance(instanceId: string, images: boolean): Promise<void> {
  const filters = { label: [`svc.instance=${instanceId}`] };
  for (const c of await docker.listContainers({ all: true, filters }))
    await docker.getContainer(c.Id).remove({ force: true, v: true });
  for (const v of (await docker.listVolumes({ filters })).Volumes ?? [])
    await docker.getVolume(v.Name).remove({ force: true });
  for (const n of await docker.listNetworks({ filters })) await docker.getNetwork(n.Id).remove();
  if (!images) return;
  for (const img of await docker.listImages({ filters }))
    await docker.getImage(img.Id).remove({ force: true });
}

async function stopServer(svc: Served | null): Promise<void> {
  if (!svc || svc.proc.exitCode !== null || svc.proc.signalCode !== null) return;
  svc.proc.kill('SIGTERM');
  const timer = setTimeout(() => svc.proc.kill('SIGKILL'), 15_000);
  await svc.exited;
  clearTimeout(timer);
}

/** `svc restore-instance`, a child process like the servers (so Ctrl-C can end it); exit code and output. */
function restoreInstance(
  artifact: string,
  vars: Record<string, string>,
  track: (p: ReturnType<typeof spawn>) => void,
): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [CLI, 'restore-instance', artifact, '--key', TEST_MASTER_KEY], {
      env: cleanEnv(vars),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    track(p);
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (out += d));
    p.on('close', (code) => resolve({ code, out }));
  });
}

async function main(): Promise<void> {
  await ensureBaseImage();
  const work = await mkdtemp(join(tmpdir(), 'svc-bench-dr-'));
  const aDir = join(work, 'a');
  const bDir = join(work, 'b');
  const tag = randomBytes(3).toString('hex');
  const names = Array.from({ length: APPS }, (_, i) => `dr${i + 1}-${tag}`);
  const gitApp = REBUILD ? `drgit-${tag}` : null;
  const content = (name: string) => `page of ${name}`;
  let a: Served | null = null;
  let b: Served | null = null;
  let git: GitServer | null = null;
  let restoring: ReturnType<typeof spawn> | null = null;
  let instanceId: string | null = null;
  let imageBuilt = false;
  let cleaning: Promise<void> | null = null;
  const cleanup = () =>
    (cleaning ??= (async () => {
      restoring?.kill('SIGKILL');
      await stopServer(b);
      await stopServer(a);
      // By the instance label (B is A restored: the same id), then by app name for anything made
      // before the id was known; built images of the git app go too, the shared base image stays.
      if (instanceId) await wipeInstance(instanceId, true).catch((e) => console.error('cleanup', e));
      for (const name of [...names, ...(gitApp ? [gitApp] : [])]) {
        const label = { label: [`svc.app=${name}`] };
        for (const c of await docker.listContainers({ all: true, filters: label }).catch(() => []))
          await docker
            .getContainer(c.Id)
            .remove({ force: true, v: true })
            .catch(() => undefined);
        for (const n of await docker.listNetworks({ filters: label }).catch(() => []))
          await docker
            .getNetwork(n.Id)
            .remove()
            .catch(() => undefined);
        for (const v of (await docker.listVolumes({ filters: label }).catch(() => ({ Volumes: [] })))
          .Volumes ?? [])
          await docker
            .getVolume(v.Name)
            .remove()
            .catch(() => undefined);
        for (const img of await docker.listImages({ filters: label }).catch(() => []))
          await docker
            .getImage(img.Id)
            .remove({ force: true })
            .catch(() => undefined);
      }
      if (imageBuilt) await sh('docker', ['rmi', '-f', WEB_IMAGE]).catch((e) => console.error('cleanup', e));
      await git?.stop().catch(() => undefined);
      await rm(work, { recursive: true, force: true });
    })());
  // The servers are not our process group's children in every shell: never leave one running.
  process.once('exit', () => {
    restoring?.kill('SIGKILL');
    a?.proc.kill('SIGKILL');
    b?.proc.kill('SIGKILL');
  });
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      console.error(`${sig}: cleaning up`);
      void cleanup().finally(() => process.exit(130));
    });
  }
  // Each app writes the page its env names, so the page that comes back proves it is that app
  // with its restored configuration.
  const dockerfile = `FROM ${BASE_IMAGE}\nCMD ["sh", "-c", "mkdir -p /www && echo \\"$PAGE\\" > /www/index.html && trap 'exit 0' TERM; httpd -f -p 8080 -h /www & wait"]\n`;
  const vars = {
    SVC_MASTER_KEY: TEST_MASTER_KEY,
    SVC_LOG_LEVEL: 'info',
    // The bench's own requests only; no password hashing cost matters here.
    SVC_PASSWORD_COST: '14',
    SVC_PROXY: 'off',
  };
  const dirVars = (dir: string) => ({
    SVC_DATA_DIR: dir,
    SVC_ACCESS_LOG: join(dir, 'access.log'),
    SVC_SECURITY_DIR: join(dir, 'security'),
    SVC_CADDY_STORAGE: join(dir, 'caddy'),
  });
  try {
    const built = spawn('docker', ['build', '-q', '-t', WEB_IMAGE, '-'], {
      stdio: ['pipe', 'ignore', 'inherit'],
    });
    built.stdin.end(dockerfile);
    const code = await new Promise((r) => built.on('close', r));
    if (code !== 0) throw new Error(`docker build exited with ${code}`);
    imageBuilt = true;

    // Instance A, with its apps answering.
    a = await serve({ ...vars, ...dirVars(aDir) });
    const c = await adminClient(a.url, aDir);
    const token = (await c.req('POST', '/api/auth/api-tokens', { name: 'bench' })).body.token as string;
    if (CONCURRENCY !== null) {
      const r = await c.req('PUT', '/api/instance/deploy-concurrency', { concurrency: CONCURRENCY });
      if (r.status !== 200) throw new Error(`deploy concurrency: ${r.status} ${r.text}`);
    }
    const concurrency = (await c.req('GET', '/api/instance/deploy-concurrency')).body.concurrency as number;
    const t0 = performance.now();
    const created: Array<{ id: string; name: string; dep: string }> = [];
    for (const name of names) {
      const app = await c.req('POST', '/api/apps', { name, source: { type: 'image', image: WEB_IMAGE } });
      if (app.status !== 201) throw new Error(`create app: ${app.status} ${app.text}`);
      const id = app.body.app.id as string;
      const env = await c.req('PUT', `/api/apps/${id}/env`, {
        items: [{ key: 'PAGE', value: content(name), secret: true }],
      });
      if (env.status !== 200) throw new Error(`env: ${env.status} ${env.text}`);
      const dep = await c.req('POST', `/api/apps/${id}/deployments`, {});
      if (dep.status !== 202) throw new Error(`deploy: ${dep.status} ${dep.text}`);
      created.push({ id, name, dep: dep.body.deployment.id });
    }
    if (gitApp) {
      git = await startGitServer();
      await git.commit('web', webRepo(content(gitApp)));
      const app = await c.req('POST', '/api/apps', {
        name: gitApp,
        source: { type: 'git', repo_url: git.url('web'), branch: 'main' },
      });
      if (app.status !== 201) throw new Error(`create git app: ${app.status} ${app.text}`);
      const dep = await c.req('POST', `/api/apps/${app.body.app.id}/deployments`, {});
      if (dep.status !== 202) throw new Error(`deploy: ${dep.status} ${dep.text}`);
      created.push({ id: app.body.app.id, name: gitApp, dep: dep.body.deployment.id });
    }
    for (const x of created) await deployed(c, x.id, x.dep);
    const all = new Set(created.map((x) => x.name));
    const [one] = await docker.listContainers({ filters: { label: [`svc.app=${names[0]}`] } });
    instanceId = one?.Labels['svc.instance'] ?? null;
    if (!instanceId) throw new Error('no container of the first app carries svc.instance');
    const onA = await pages(instanceId, all);
    for (const name of all)
      if (onA.get(name) !== content(name))
        throw new Error(`${name} on A answers ${JSON.stringify(onA.get(name) ?? null)}`);
    console.log(`instance A: ${all.size} apps deployed and answering in ${sec(performance.now() - t0)}`);

    // One instance backup to local disk, copied out of A's data directory as an operator would.
    const run = await c.req('POST', '/api/instance/backup/run');
    if (run.status !== 202) throw new Error(`instance backup: ${run.status} ${run.text}`);
    const done = await until(
      'instance backup',
      async () => {
        const x = (await c.req('GET', `/api/instance/backup/runs/${run.body.run.id}`)).body.run;
        if (x.status === 'failed') throw new Error(`instance backup failed: ${x.error}`);
        return x.status !== 'running' && x.verified_at ? x : null;
      },
      120_000,
    );
    const artifact = join(work, `${done.id}.svcbak`);
    await copyFile(join(aDir, 'backups', 'instance', `${done.id}.svcbak`), artifact);
    console.log(`instance backup: ${(done.size_bytes / 1024).toFixed(1)} KiB`);

    // The server is lost: the process, its disk, and everything it had on the engine.
    await stopServer(a);
    a = null;
    await wipeInstance(instanceId, false);
    if (gitApp)
      for (const img of await docker.listImages({ filters: { label: [`svc.app=${gitApp}`] } }))
        await docker.getImage(img.Id).remove({ force: true });
    await rm(aDir, { recursive: true, force: true });
    if (
      (await docker.listContainers({ all: true, filters: { label: [`svc.instance=${instanceId}`] } })).length
    )
      throw new Error('containers of A are left');

    const r0 = performance.now();
    // SVC_PORT 1: restore-instance refuses while a service answers on the configured port.
    const restored = await restoreInstance(
      artifact,
      { ...dirVars(bDir), SVC_PORT: '1' },
      (p) => (restoring = p),
    );
    restoring = null;
    const restoreMs = performance.now() - r0;
    if (restored.code !== 0)
      throw new Error(`svc restore-instance exited with ${restored.code}: ${restored.out}`);

    const b0 = performance.now();
    b = await serve({ ...vars, ...dirVars(bDir) });
    const listenMs = performance.now() - b0;
    const answered = new Map<string, number>();
    await until(
      'every app answering on B',
      async () => {
        const now = await pages(instanceId!, all);
        const at = performance.now();
        for (const [name, page] of now)
          if (!answered.has(name) && page === content(name)) answered.set(name, at);
        if (b!.proc.exitCode !== null) throw new Error(`B exited: ${b!.stderr.join('\n')}`);
        return answered.size === all.size ? true : null;
      },
      600_000,
      100,
    );
    const bc = new Client(b.url);
    bc.bearer = token;
    const report = await until(
      'recovery report',
      async () => {
        const r = await bc.req('GET', '/api/instance/recovery');
        if (r.status === 401) throw new Error('the API token of A is refused by B');
        return r.status === 200 && r.body.finished_at ? r.body : null;
      },
      600_000,
      100,
    );
    const reportMs = performance.now() - r0;
    const failed = report.items.filter((i: any) => i.outcome !== 'redeployed');
    if (failed.length) throw new Error(`recovery: ${JSON.stringify(failed)}`);

    const first = Math.min(...answered.values());
    const how = `deploy concurrency ${concurrency}${CONCURRENCY === null ? " (the instance's default)" : ''}`;
    console.log(
      `\ndisaster recovery of ${all.size} apps, ${how}${gitApp ? `; ${gitApp} rebuilt from git (its images were removed)` : ''}; clock from restore-instance:`,
    );
    console.log(
      `  svc restore-instance (authenticate, integrity and key checks, put in place): ${sec(restoreMs)}`,
    );
    console.log(`  B start to listening:                 ${sec(listenMs)}`);
    console.log(`  B start to first app answering:       ${sec(first - b0)}`);
    console.log(
      `  total, restore-instance to all ${all.size} answering: ${sec(Math.max(...answered.values()) - r0)}`,
    );
    for (const [name, at] of [...answered].sort((x, y) => x[1] - y[1]))
      console.log(
        `    ${name.padEnd(14)} answers its own page at ${sec(at - r0)} (B start + ${sec(at - b0)})`,
      );
    console.log(`  recovery report finished (every redeploy succeeded, after its settle): ${sec(reportMs)}`);
    const rebuilt = report.items.find((i: any) => i.name === gitApp);
    if (rebuilt) console.log(`  ${gitApp}: ${rebuilt.detail}`);
  } finally {
    await cleanup();
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
