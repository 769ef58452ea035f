// Helpers for the deployment tests: a real git server on loopback (git daemon) holding small
// repositories the tests write, a client container on an app's network, and polling of the API.
import { PassThrough } from 'node:stream';
import type { Engine } from '#lib/docker/index.js';
import { stackRemove, guard } from '#lib/docker/index.js';
import { BASE_IMAGE, ensureBaseImage } from '../_support/docker.js';
import { startGitServer, type GitServer } from '../_support/gitserver.js';
import { adminClient, startTestServer, type Client, type TestServer } from '../_support/server.js';

export { freePort } from '../_support/net.js';
export { startGitServer, type GitServer } from '../_support/gitserver.js';

/** A git server and a control plane that deploys from it, with short gates (still generous on a loaded 2-core machine). */
export async function startDeployServer(): Promise<{ git: GitServer; s: TestServer; admin: Client }> {
  await ensureBaseImage();
  const git = await startGitServer();
  const s = await startTestServer();
  const admin = await adminClient(s);
  s.env.deployments.opts.healthTimeoutMs = 60_000;
  s.env.deployments.opts.settleMs = 1_500;
  return { git, s, admin };
}

/** A Dockerfile app serving `content` on 8080; SIGTERM ends it at once (as a real app would). */
export function webRepo(content: string, extra = ''): Record<string, string> {
  return {
    'index.html': `${content}\n`,
    Dockerfile:
      [
        `FROM ${BASE_IMAGE}`,
        extra,
        'COPY index.html /www/index.html',
        'EXPOSE 8080',
        `CMD ["sh", "-c", "trap 'exit 0' TERM; httpd -f -p 8080 -h /www & wait"]`,
      ]
        .filter(Boolean)
        .join('\n') + '\n',
  };
}

/** Runs one request from a throwaway container on the app's network; the body, or null. */
export async function callInApp(engine: Engine, app: string, url: string): Promise<string | null> {
  return guard(engine, async () => {
    const c = await engine.docker.createContainer({
      Image: BASE_IMAGE,
      Cmd: ['timeout', '5', 'wget', '-q', '-O', '-', url],
      Labels: { 'svc.test': 'client' },
      HostConfig: { NetworkMode: `svc-${app}` },
    });
    try {
      await c.start();
      const r = (await c.wait()) as { StatusCode: number };
      const raw = (await c.logs({ stdout: true, stderr: false })) as Buffer;
      const out = new PassThrough();
      const chunks: Buffer[] = [];
      out.on('data', (b: Buffer) => chunks.push(b));
      engine.docker.modem.demuxStream(bufferStream(raw), out, new PassThrough());
      await new Promise((r2) => setImmediate(r2));
      return r.StatusCode === 0 ? Buffer.concat(chunks).toString() : null;
    } finally {
      await c.remove({ force: true, v: true }).catch(() => {});
    }
  });
}

function bufferStream(b: Buffer): PassThrough {
  const p = new PassThrough();
  p.end(b);
  return p;
}

export async function waitStatus(
  c: Client,
  appId: string,
  depId: string,
  wanted: string[],
  timeoutMs = 240_000,
): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await c.req('GET', `/api/apps/${appId}/deployments/${depId}`);
    if (r.status !== 200) throw new Error(`GET deployment: ${r.status} ${r.text}`);
    const d = r.body.deployment;
    if (wanted.includes(d.status)) return d;
    if (['succeeded', 'failed', 'canceled', 'interrupted'].includes(d.status) || Date.now() > deadline) {
      const logs = await c.req('GET', `/api/apps/${appId}/deployments/${depId}/logs`);
      throw new Error(
        `deployment is ${d.status} (wanted ${wanted.join('|')}): ${d.error}\n${(logs.body?.items ?? []).map((l: any) => l.line).join('\n')}`,
      );
    }
    await new Promise((r2) => setTimeout(r2, 250));
  }
}

/** Removes everything an app left on the engine: containers, networks, volumes, images. */
/** Test cleanup: whichever control plane (instance id) made the app's objects, they go. */
export async function cleanupApp(engine: Engine, app: string): Promise<void> {
  const label = { label: [`svc.app=${app}`] };
  for (const c of await engine.docker.listContainers({ all: true, filters: label }).catch(() => []))
    await engine.docker
      .getContainer(c.Id)
      .remove({ force: true, v: true })
      .catch(() => {});
  await stackRemove(engine, app, { volumes: true }).catch(() => {});
  for (const n of await engine.docker.listNetworks({ filters: label }).catch(() => []))
    await engine.docker
      .getNetwork(n.Id)
      .remove()
      .catch(() => {});
  for (const v of (await engine.docker.listVolumes({ filters: label }).catch(() => ({ Volumes: [] })))
    .Volumes ?? [])
    await engine.docker
      .getVolume(v.Name)
      .remove()
      .catch(() => {});
  const images = await engine.docker.listImages({ filters: { label: [`svc.app=${app}`] } }).catch(() => []);
  for (const img of images)
    await engine.docker
      .getImage(img.Id)
      .remove({ force: true, v: true })
      .catch(() => {});
}
