// Every stack deploys from a plain repository and answers through the proxy. For each sample
// (tests/_support/samples.ts: node with real dependencies, a node front-end served as files, python,
// go, static, php, ruby), the repository is committed to the local git server, a git app is created
// over HTTP and deployed through POST /api/apps/{id}/deployments: detection, the generated Dockerfile
// with SVC_IMAGE_MAP pointing the official references at local stand-ins
// (tests/_support/stackimages.ts), the engine's build, the health gate and the switch of real Caddy.
// The sample's known body is then fetched through Caddy on the app's automatic host, and the
// deployed image is inspected: a non-root user, no build tools, no dev dependencies or dotfiles.
// One server, one Caddy and the stand-ins serve every stack; the deployments are all queued at
// once and run two at a time (deploy concurrency and SVC_BUILD_CONCURRENCY both 2).
import { test, after, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { needEdge, startEdgeLab, type EdgeLab } from '../_support/edge.js';
import { needDocker } from '../_support/docker.js';
import { needStackImages, stackImageMap } from '../_support/stackimages.js';
import { SAMPLES, sample, writeSample, type Sample, type SampleName } from '../_support/samples.js';
import { fetchBody, imagePaths, programsIn, runImage } from '../_support/stackbuild.js';
import { startTestServer, adminClient, type Client, type TestServer } from '../_support/server.js';
import { poll } from '../_support/wait.js';
import { startGitServer, waitStatus, cleanupApp, type GitServer } from './_deploy.js';
import { removeTagged } from './_helpers.js';
import { listAppContainers } from '#lib/docker/index.js';

const BASE = 'stacks.test';
const label = `stacks-${randomBytes(4).toString('hex')}`;

interface Deployed {
  app: { id: string; name: string };
  deployment: any;
  /** The plan GET /build-plan showed before the deploy. */
  plan: any;
}

let lab: EdgeLab | undefined;
let s: TestServer | undefined;
let git: GitServer | undefined;
let admin: Client;
const apps: string[] = [];
let started: Promise<Map<SampleName, Promise<Deployed>>> | undefined;

after(async () => {
  if (s) {
    for (const a of apps) await cleanupApp(s.env.engine, a);
    await removeTagged(s.env.engine, label);
    await s.stop();
  }
  await git?.stop();
  await lab?.stop();
});

async function deploySample(name: SampleName): Promise<Deployed> {
  const smp = sample(name);
  const repo = `${name}-${randomBytes(3).toString('hex')}`;
  // Written where the git server keeps its repositories, then committed: the node samples' lock
  // files come from the registry's client, as a developer's would.
  await writeSample(smp, join(git!.base, repo));
  await git!.commit(repo, {}, 'sample');
  const appName = `stk-${name}-${randomBytes(2).toString('hex')}`;
  apps.push(appName);
  const r = await admin.req('POST', '/api/apps', {
    name: appName,
    source: { type: 'git', repo_url: git!.url(repo), branch: 'main' },
  });
  assert.equal(r.status, 201, r.text);
  const app = { id: r.body.app.id as string, name: appName };
  const plan = await admin.req('GET', `/api/apps/${app.id}/build-plan`);
  assert.equal(plan.status, 200, plan.text);
  // No port is set: the deploy takes the plan's, so the app gets its automatic host. The health
  // gate waits for the sample's page, not just a running container.
  const h = await admin.req('PATCH', `/api/apps/${app.id}/services/app`, { health_path: smp.path });
  assert.equal(h.status, 200, h.text);
  const d = await admin.req('POST', `/api/apps/${app.id}/deployments`, {});
  assert.equal(d.status, 202, d.text);
  const deployment = await waitStatus(admin, app.id, d.body.deployment.id, ['succeeded'], 900_000);
  const services = await admin.req('GET', `/api/apps/${app.id}/services`);
  const svc = services.body.items.find((x: { name: string }) => x.name === 'app');
  assert.equal(svc?.port, plan.body.port, services.text);
  return { app, deployment, plan: plan.body };
}

/** Starts the lab, the server and every deployment once; each test awaits its own. */
async function deployments(t: TestContext): Promise<Map<SampleName, Promise<Deployed>> | null> {
  if (!(await needEdge(t)) || !(await needDocker(t))) return null;
  const images = await needStackImages(t);
  if (!images) return null;
  started ??= (async () => {
    lab = await startEdgeLab();
    git = await startGitServer();
    const env = {
      ...lab.vars,
      SVC_BASE_DOMAIN: BASE,
      SVC_IMAGE_MAP: JSON.stringify(stackImageMap(images)),
      SVC_BUILD_CONCURRENCY: '2',
    };
    s = await startTestServer(env, { edge: { checkIntervalMs: 1000, checkerTickMs: 250 } });
    s.env.deployments.opts.healthTimeoutMs = 120_000;
    s.env.deployments.opts.settleMs = 1_500;
    admin = await adminClient(s);
    const c = await admin.req('PUT', '/api/instance/deploy-concurrency', { concurrency: 2 });
    assert.equal(c.status, 200, c.text);
    const all = new Map<SampleName, Promise<Deployed>>();
    // The slowest builds (npm installs, the go compiler) are queued first.
    for (const name of SAMPLES) {
      const p = deploySample(name);
      p.catch(() => {}); // reported by the test that awaits it
      all.set(name, p);
    }
    return all;
  })();
  return started;
}

for (const name of SAMPLES) {
  test(`${name}: a plain repository deploys through the API and answers its body through Caddy, non-root, without build tools`, async (t) => {
    const all = await deployments(t);
    if (!all) return;
    const smp: Sample = sample(name);
    const { app, deployment, plan } = await all.get(name)!;
    assert.equal(plan.stack, smp.stack, JSON.stringify(plan));

    // Caddy serves a host over plain HTTP until its certificate is served, then redirects to HTTPS
    // (lib/proxy/config.ts): whichever it does, the body comes from the app through Caddy.
    const host = `${app.name}.${BASE}`;
    const served = await poll(
      `${host} through Caddy`,
      async () => {
        const plain = await lab!.http(host, smp.path);
        const r = plain.status === 308 ? await lab!.https(host, smp.path) : plain;
        if (r.status !== 200) throw new Error(`status ${r.status}: ${r.body.slice(0, 200)}`);
        return r;
      },
      90_000,
      250,
    );
    assert.equal(served.body, smp.body);

    // The deployed image, svc/<app>-<service>:<deployment>.
    const image: string = deployment.image;
    assert.match(image, new RegExp(`^svc/${app.name}-app:`));
    const engine = s!.env.engine;
    const cfg = (await engine.docker.getImage(image).inspect()).Config;
    assert.ok(cfg.User && !/^(root|0)(:|$)/.test(cfg.User), `image user ${cfg.User}`);
    assert.ok(cfg.Env.includes(`PORT=${plan.port}`), cfg.Env.join(' '));
    // Every process of the running app, as the host sees it (no user namespace remapping here).
    const running = (await listAppContainers(engine, app.name)).filter((c) => c.state === 'running');
    assert.equal(running.length, 1, JSON.stringify(running));
    const top = await engine.docker.getContainer(running[0]!.id).top({ ps_args: '-o pid,uid,comm' });
    const col = (top.Titles as string[]).indexOf('UID');
    const uids = (top.Processes as string[][]).map((p) => p[col]);
    assert.ok(uids.length > 0 && uids.every((u) => u !== '0'), JSON.stringify(top.Processes));

    assert.deepEqual(
      await programsIn(engine, image, label, smp.absent),
      [],
      `build tools in the final image of ${name}`,
    );
    const files = await imagePaths(engine, image, label, smp.absentFiles);
    assert.deepEqual(
      Object.keys(files).filter((f) => files[f]),
      [],
      `files that must not reach the final image of ${name}`,
    );
    // The same image also runs with every capability dropped and no-new-privileges, as an operator
    // may run it (Caddy's binary, for one, must not carry a file capability).
    const r = await runImage(engine, image, plan.port, label);
    assert.equal(await fetchBody(engine, r, smp.path), smp.body);
  });
}
