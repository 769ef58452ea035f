// npm run bench:build [-- --rounds N]: builds from source on the real engine with the local
// stand-ins for the official runtime images (tests/_support/stackimages.ts).
//   1. The node sample with real dependencies: a cold build (no cache), then a build after a
//      change to a source file with the dependencies unchanged. Goal: the second <= 0.3x the first.
//   2. Per sample (tests/_support/samples.ts): the generated Dockerfile against a careful
//      hand-written one (bench/build/<sample>.Dockerfile), both built without cache, both run and
//      checked for the sample's body. Goals: image size <= 1.15x, build time <= 1.1x.
// Build times are medians over the rounds (default 1).
import { mkdtemp, mkdir, readFile, rm, writeFile, cp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { arg } from './_args.js';
import { DOCKER_SOCKET } from '../tests/_support/docker.js';
import { ensureStackImages, stackImageMap } from '../tests/_support/stackimages.js';
import { SAMPLES, sample, writeSample, type SampleName } from '../tests/_support/samples.js';
import { PLAN_DOCKERFILE, fetchBody, planOfDir, runImage } from '../tests/_support/stackbuild.js';
import { removeTagged } from '../tests/engine/_helpers.js';
import { mapDockerfileImages } from '#lib/buildplan/index.js';
import { createEngine, packTree } from '#lib/docker/index.js';
import { ownerLabels } from '#lib/docker/owner.js';

const HAND = fileURLToPath(new URL('../../bench/build/', import.meta.url));
const rounds = arg('--rounds', 1);
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

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
const f = (x: number, d = 1) => x.toFixed(d);
const mark = (ok: boolean) => (ok ? 'ok' : 'MISSED');

async function main(): Promise<void> {
  const t0 = Date.now();
  const images = await ensureStackImages();
  console.log(`stand-in images ready in ${f((Date.now() - t0) / 1000)} s`);
  const map = stackImageMap(images);
  const root = await mkdtemp(join(tmpdir(), 'svc-bench-build-'));
  try {
    // 1. Cold build, then a source change with the same lock file.
    const node = sample('node');
    const dir = join(root, 'node-rebuild');
    await mkdir(dir);
    await writeSample(node, dir);
    const plan = await planOfDir(dir);
    const colds: number[] = [];
    const warms: number[] = [];
    for (let i = 0; i < rounds; i++) {
      colds.push((await build(dir, plan.dockerfile, map, `svc-test/bench-node:${label}`, true)).s);
      const src = join(dir, node.source);
      await writeFile(src, `${await readFile(src, 'utf8')}// edit ${i} ${randomBytes(4).toString('hex')}\n`);
      warms.push((await build(dir, plan.dockerfile, map, `svc-test/bench-node:${label}`, false)).s);
    }
    await check(`svc-test/bench-node:${label}`, plan.port, node.path, node.body);
    const [cold, warm] = [median(colds), median(warms)];
    console.log('\nnode sample: rebuild after a source change, dependencies unchanged');
    console.log(
      `  cold build ${f(cold)} s, rebuild ${f(warm)} s, ratio ${f(warm / cold, 2)} (goal <= 0.30: ${mark(warm / cold <= 0.3)})`,
    );

    // 2. Generated against hand-written, per sample.
    const rows: string[][] = [];
    for (const name of SAMPLES) {
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
