// npm run bench:pull — the time a pull adds to a deploy. A ~100 MB image (a busybox base and
// 100 MB of random bytes, so the layer does not compress) is pushed to a private registry on
// loopback (Debian's docker-registry with bcrypt htpasswd, tests/_support/registry.ts); then, in
// the same run and for the same image app:
//   present: the engine has the image: POST /deployments -> succeeded, no pull;
//   pulled:  the image removed from the engine first: the same deploy pulls it with the stored
//            credentials before starting it;
//   plain:   `POST /images/create` of that image straight against the engine (the pull alone).
// Prints medians, the difference (what the pull adds) and the ratio to the plain pull.
// `--mb N` sets the image's size; BENCH_ROUNDS (default 3) the rounds.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { randomBytes } from 'node:crypto';
import { startTestServer, adminClient, ADMIN, type Client } from '../tests/_support/server.js';
import { ensureBaseImage, BASE_IMAGE, DOCKER_SOCKET } from '../tests/_support/docker.js';
import { startRegistry } from '../tests/_support/registry.js';
import { cleanupApp, waitStatus } from '../tests/engine/_deploy.js';
import { arg } from './_args.js';

const run = promisify(execFile);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const MB = arg('--mb', 100);
const LABEL = `svc.bench=pull-${process.pid}`;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function buildBig(tag: string): Promise<void> {
  const dockerfile = [
    `FROM ${BASE_IMAGE}`,
    `RUN head -c ${MB}m /dev/urandom > /blob && mkdir -p /www && echo big > /www/index.html`,
    `LABEL ${LABEL}`,
    `CMD ["sh", "-c", "trap 'exit 0' TERM; httpd -f -p 8080 -h /www & wait"]`,
    '',
  ].join('\n');
  await new Promise<void>((resolve, reject) => {
    const p = execFile('docker', ['build', '-q', '-t', tag, '-'], (e) => (e ? reject(e) : resolve()));
    p.stdin!.end(dockerfile);
  });
}

/** Removes every local name of the image (its app deleted first, so no container holds it). */
async function forgetImage(ref: string): Promise<void> {
  const { stdout } = await run('docker', ['image', 'inspect', '-f', '{{.Id}}', ref]).catch(() => ({
    stdout: '',
  }));
  if (stdout.trim()) await run('docker', ['image', 'rm', '-f', stdout.trim()]);
}

async function timedDeploy(c: Client, ref: string): Promise<{ ms: number; id: string; name: string }> {
  const name = `bench-pull-${randomBytes(3).toString('hex')}`;
  const app = (await c.req('POST', '/api/apps', { name, source: { type: 'image', image: ref } })).body.app;
  const t0 = performance.now();
  const d = await c.req('POST', `/api/apps/${app.id}/deployments`, {});
  const done = await waitStatus(c, app.id, d.body.deployment.id, ['succeeded']);
  if (done.status !== 'succeeded') throw new Error(done.error);
  return { ms: performance.now() - t0, id: app.id, name };
}

async function main(): Promise<void> {
  await ensureBaseImage();
  const reg = await startRegistry();
  const s = await startTestServer();
  s.env.deployments.opts.settleMs = 1_000;
  const c = await adminClient(s);
  const local = `svc-bench/pull-big:${process.pid}`;
  const ref = `${reg.host}/bench/big:1`;
  const made: string[] = [];
  try {
    await c.req('POST', '/api/auth/step-up', { password: ADMIN.password });
    await c.req('POST', '/api/registries', {
      host: reg.host,
      username: reg.username,
      password: reg.password,
    });
    await buildBig(local);
    await reg.push(local, 'bench/big:1');
    await run('docker', ['image', 'rm', local]);
    const present: number[] = [];
    const pulled: number[] = [];
    const plain: number[] = [];
    const auth = Buffer.from(JSON.stringify({ username: reg.username, password: reg.password }))
      .toString('base64')
      .replace(/\+/g, '-')
      .replace(/\//g, '_');
    for (let i = 0; i < ROUNDS; i++) {
      await forgetImage(ref);
      const t0 = performance.now();
      await run('curl', [
        '-sf',
        '--unix-socket',
        DOCKER_SOCKET,
        '-X',
        'POST',
        '-H',
        `X-Registry-Auth: ${auth}`,
        `http://engine/images/create?fromImage=${encodeURIComponent(ref)}`,
      ]);
      plain.push(performance.now() - t0);
      const warm = await timedDeploy(c, ref);
      present.push(warm.ms);
      made.push(warm.name);
      await c.req('POST', '/api/auth/step-up', { password: ADMIN.password });
      await c.req('DELETE', `/api/apps/${warm.id}`);
      await forgetImage(ref);
      const cold = await timedDeploy(c, ref);
      pulled.push(cold.ms);
      made.push(cold.name);
      await c.req('POST', '/api/auth/step-up', { password: ADMIN.password });
      await c.req('DELETE', `/api/apps/${cold.id}`);
      console.log(
        `round ${i + 1}: present ${warm.ms.toFixed(0)} ms, pulled ${cold.ms.toFixed(0)} ms, plain pull ${plain[i]!.toFixed(0)} ms`,
      );
    }
    const added = median(pulled) - median(present);
    console.log(`\n${MB} MB image from a registry on loopback, ${ROUNDS} rounds (medians):`);
    console.log(`  deploy, image present:   ${median(present).toFixed(0)} ms`);
    console.log(`  deploy, image pulled:    ${median(pulled).toFixed(0)} ms`);
    console.log(`  the pull adds:           ${added.toFixed(0)} ms`);
    console.log(`  plain engine pull:       ${median(plain).toFixed(0)} ms`);
    console.log(`  added / plain pull:      ${(added / median(plain)).toFixed(2)}x`);
  } finally {
    for (const name of made) await cleanupApp(s.env.engine, name);
    await forgetImage(ref).catch(() => {});
    await run('docker', ['image', 'rm', '-f', local]).catch(() => {});
    await reg.stop();
    await s.stop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
