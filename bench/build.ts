// npm run bench:build [-- --rounds N] [-- --only static,node-static]: builds from source on the real
// engine with the local stand-ins for the official runtime images (tests/_support/stackimages.ts).
// The caddy stand-in gets the official binary's file capability here (Debian's binary has none),
// and every image is run as a hardened deploy may run it: as the image's non-root user, with every
// capability dropped and no-new-privileges (tests/_support/stackbuild.ts runImage).
//   1. Node: a cold build (the cache on, nothing of the app in it), then a build after a change to a
//      source file with the dependencies unchanged. Goal, for the server with a realistic dependency
//      tree (bench/_node-app.ts, about 330 packages): the second <= 0.3x the first. The test suite's
//      two-package sample is printed too, labelled.
//   2. Per sample (tests/_support/samples.ts): the generated Dockerfile against a careful
//      hand-written one (bench/build/<sample>.Dockerfile), both built without cache, both run and
//      checked for the sample's body. Goals: image size <= 1.15x, build time <= 1.1x.
// Build times are medians over the rounds (default 1). --only limits part 2 to the named samples and
// skips part 1.
import { mkdtemp, mkdir, readFile, rm, writeFile, cp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { arg } from './_args.js';
import { DOCKER_SOCKET } from '../tests/_support/docker.js';
import { ensureStackImages, stackImageMap } from '../tests/_support/stackimages.js';
import { SAMPLES, sample, writeSample, type Sample, type SampleName } from '../tests/_support/samples.js';
import { PLAN_DOCKERFILE, fetchBody, planOfDir, runImage } from '../tests/_support/stackbuild.js';
import { removeTagged } from '../tests/engine/_helpers.js';
import { mapDockerfileImages } from '#lib/buildplan/index.js';
import { CADDY_IMAGE } from '#lib/buildplan/caddy.js';
import { nodeApp } from './_node-app.js';
import { createEngine, packTree } from '#lib/docker/index.js';
import { ownerLabels } from '#lib/docker/owner.js';

const HAND = fileURLToPath(new URL('../../bench/build/', import.meta.url));
const rounds = arg('--rounds', 1);
const onlyAt = process.argv.indexOf('--only');
const only = onlyAt === -1 ? null : (process.argv[onlyAt + 1] ?? '').split(',');
if (only?.some((n) => !SAMPLES.includes(n as SampleName)))
  throw new Error(`--only takes sample names from: ${SAMPLES.join(',')}`);
const engine = createEngine({ socketPath: DOCKER_SOCKET });
const label = `bench-build-${randomBytes(4).toString('hex')}`;

/** One build through the engine API (the legacy builder, as lib/docker's buildImage uses it). */
async function build(
  dir: string,
  dockerfile: string,
  map: Record<string, string>,
  tag: string,
  nocache: boolean,
): Promise<{ s: number; mb: number }> {
  await writeFile(join(dir, PLAN_DOCKERFILE), mapDockerfileImages(dockerfile, map));
  const pack = await packTree(dir, 1024 ** 3);
  const start = process.hrtime.bigint();
  const stream = await engine.docker.buildImage(pack as unknown as NodeJS.ReadableStream, {
    t: tag,
    dockerfile: PLAN_DOCKERFILE,
    nocache,
    rm: true,
    forcerm: true,
    labels: { ...ownerLabels(engine), 'svc.test': label },
  });
  const out: { error?: string; stream?: string }[] = await new Promise((resolve, reject) =>
    engine.docker.modem.followProgress(stream, (err: Error | null, res: { error?: string }[]) =>
      err ? reject(err) : resolve(res),
    ),
  );
  const s = Number(process.hrtime.bigint() - start) / 1e9;
  const failed = out.find((m) => m.error);
  if (failed)
    throw new Error(
      `${tag}: ${failed.error}\n${out
        .map((m) => m.stream ?? '')
        .join('')
        .slice(-3000)}`,
    );
  const img = await engine.docker.getImage(tag).inspect();
  return { s, mb: img.Size / 1e6 };
}

async function check(tag: string, port: number, path: string, body: string): Promise<void> {
  const user = (await engine.docker.getImage(tag).inspect()).Config.User ?? '';
  if (/^(|0|root)(:|$)/.test(user)) throw new Error(`${tag} runs as root (USER "${user}")`);
  const r = await runImage(engine, tag, port, label);
  try {
    const got = await fetchBody(engine, r, path);
    if (got !== body)
      throw new Error(`${tag} answered ${JSON.stringify(got)}, expected ${JSON.stringify(body)}`);
  } finally {
    await engine.docker
      .getContainer(r.id)
      .remove({ force: true })
      .catch(() => {});
  }
}

/**
 * The caddy stand-in with the file capability the official image sets on its binary
 * (cap_net_bind_service=+ep), set by a RUN so that it stays in the layer as in a pulled image (a COPY
 * of the legacy builder chowns, which clears it). Then a Dockerfile that runs the binary as it is
 * fails under the hardened run, as it would on the official image: this is checked here.
 */
async function cappedCaddy(root: string, map: Record<string, string>): Promise<string> {
  const dir = join(root, 'caddy-cap');
  await mkdir(dir);
  const go = [
    'package main',
    'import ("os"; "syscall")',
    'func main() {',
    '  v := []byte{1, 0, 0, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}',
    '  if err := syscall.Setxattr(os.Args[1], "security.capability", v, 0); err != nil { panic(err) }',
    '}',
  ];
  const dockerfile = [
    'FROM golang:1.21-bookworm AS tool',
    'WORKDIR /src',
    `RUN printf '%s\\n' ${go.map((l) => `'${l}'`).join(' ')} > main.go && CGO_ENABLED=0 go build -o /setcap main.go`,
    `FROM ${CADDY_IMAGE}`,
    'COPY --from=tool /setcap /tmp/setcap',
    'RUN /tmp/setcap /usr/bin/caddy && rm /tmp/setcap',
  ].join('\n');
  const tag = `svc-test/bench-caddy-cap:${label}`;
  await build(dir, dockerfile, map, tag, false);
  const c = await engine.docker.createContainer({
    Image: tag,
    Cmd: ['/usr/bin/caddy', 'version'],
    Labels: { ...ownerLabels(engine), 'svc.test': label },
    HostConfig: { CapDrop: ['ALL'], SecurityOpt: ['no-new-privileges'] },
  });
  try {
    const started = await c.start().then(
      async () => ((await c.wait()) as { StatusCode: number }).StatusCode === 0,
      () => false,
    );
    if (started)
      throw new Error(`${tag}: the capability did not stick, caddy ran with every capability dropped`);
  } finally {
    await c.remove({ force: true });
  }
  return tag;
}

/** A cold build, then one after a source edit with the lock file unchanged, per round: medians (s). */
async function rebuild(
  s: Sample,
  dir: string,
  map: Record<string, string>,
): Promise<{ cold: number; warm: number }> {
  await mkdir(dir);
  await writeSample(s, dir);
  const plan = await planOfDir(dir);
  const tag = `svc-test/bench-${basename(dir)}:${label}`;
  const colds: number[] = [];
  const warms: number[] = [];
  const manifest = join(dir, 'package.json');
  for (let i = 0; i < rounds; i++) {
    // Cold as a first deploy is: the cache on (deploys never build without it) and nothing of this
    // app in it, through a package.json of its own (a field npm ci ignores). A build without cache
    // would leave a second `WORKDIR /app` child of the node image, made by the final stage after the
    // deps stage's; the legacy builder's cache takes the newest match, so the rebuild would then
    // miss below it and run npm ci again, which no deploy does.
    const pkg = JSON.parse(await readFile(manifest, 'utf8')) as Record<string, unknown>;
    await writeFile(manifest, JSON.stringify({ ...pkg, description: `bench ${label} ${i}` }, null, 2));
    colds.push((await build(dir, plan.dockerfile, map, tag, false)).s);
    const src = join(dir, s.source);
    await writeFile(src, `${await readFile(src, 'utf8')}// edit ${i} ${randomBytes(4).toString('hex')}\n`);
    warms.push((await build(dir, plan.dockerfile, map, tag, false)).s);
  }
  await check(tag, plan.port, s.path, s.body);
  return { cold: median(colds), warm: median(warms) };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
const f = (x: number, d = 1) => x.toFixed(d);
const mark = (ok: boolean) => (ok ? 'ok' : 'MISSED');

async function main(): Promise<void> {
  const t0 = Date.now();
  const images = await ensureStackImages();
  console.log(`stand-in images ready in ${f((Date.now() - t0) / 1000)} s`);
  const root = await mkdtemp(join(tmpdir(), 'svc-bench-build-'));
  try {
    const standIns = stackImageMap(images);
    const map = { ...standIns, [CADDY_IMAGE]: await cappedCaddy(root, standIns) };
    console.log('caddy stand-in with the official file capability: refused under cap-drop ALL, as expected');

    // 1. Cold build, then a source change with the same lock file.
    for (const [title, s, goal] of [
      ['node server with a realistic dependency tree (bench/_node-app.ts)', nodeApp(), true],
      ["the test suite's small node sample (two dependencies), for reference", sample('node'), false],
    ] as const) {
      if (only) break;
      const { cold, warm } = await rebuild(s, join(root, `rebuild-${goal ? 'app' : 'small'}`), map);
      console.log(`\n${title}: rebuild after a source change, dependencies unchanged`);
      const ratio = warm / cold;
      console.log(
        `  cold build ${f(cold)} s, rebuild ${f(warm)} s, ratio ${f(ratio, 2)}${goal ? ` (goal <= 0.30: ${mark(ratio <= 0.3)})` : ''}`,
      );
    }

    // 2. Generated against hand-written, per sample.
    const rows: string[][] = [];
    for (const name of only ?? SAMPLES) {
      const s = sample(name as SampleName);
      const gen = join(root, `${name}-generated`);
      const hand = join(root, `${name}-hand`);
      await mkdir(gen);
      await writeSample(s, gen);
      await cp(gen, hand, { recursive: true });
      const p = await planOfDir(gen);
      const handFile = await readFile(join(HAND, `${name}.Dockerfile`), 'utf8');
      const g = { s: [] as number[], mb: 0 };
      const h = { s: [] as number[], mb: 0 };
      for (let i = 0; i < rounds; i++) {
        const a = await build(gen, p.dockerfile, map, `svc-test/bench-gen-${name}:${label}`, true);
        const b = await build(hand, handFile, map, `svc-test/bench-hand-${name}:${label}`, true);
        [g.mb, h.mb] = [a.mb, b.mb];
        g.s.push(a.s);
        h.s.push(b.s);
      }
      await check(`svc-test/bench-gen-${name}:${label}`, p.port, s.path, s.body);
      await check(`svc-test/bench-hand-${name}:${label}`, p.port, s.path, s.body);
      const [gs, hs] = [median(g.s), median(h.s)];
      const size = g.mb / h.mb;
      const time = gs / hs;
      rows.push([
        name,
        f(g.mb),
        f(h.mb),
        `${f(size, 2)} ${mark(size <= 1.15)}`,
        f(gs),
        f(hs),
        `${f(time, 2)} ${mark(time <= 1.1)}`,
      ]);
    }
    const head = ['sample', 'gen MB', 'hand MB', 'size ratio', 'gen s', 'hand s', 'time ratio'];
    const widths = head.map((hd, i) => Math.max(hd.length, ...rows.map((r) => r[i]!.length)));
    const line = (r: string[]) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ');
    console.log(
      `\ngenerated vs hand-written (no cache, ${rounds} round${rounds > 1 ? 's' : ''}; goals: size <= 1.15, time <= 1.10)`,
    );
    console.log(`  ${line(head)}`);
    for (const r of rows) console.log(`  ${line(r)}`);
  } finally {
    await removeTagged(engine, label);
    await rm(root, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
