// Builds from source against real images: for each stack, the plan generated from a sample
// repository (tests/_support/samples.ts) is built by the engine with SVC_IMAGE_MAP pointing the
// official references at local stand-ins (tests/_support/stackimages.ts), run as the image says,
// and must answer the sample's known body, as a non-root user, without the build stage's tools.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { DOCKER_SOCKET } from '../_support/docker.js';
import { needStackImages, stackImageMap } from '../_support/stackimages.js';
import { SAMPLES, sample, writeSample, type SampleName } from '../_support/samples.js';
import {
  buildWithMap,
  fetchBody,
  imagePaths,
  planOfDir,
  programsIn,
  runImage,
} from '../_support/stackbuild.js';
import { createEngine } from '#lib/docker/index.js';
import { removeTagged } from './_helpers.js';

const engine = createEngine({ socketPath: DOCKER_SOCKET });
const label = `stacks-${randomBytes(4).toString('hex')}`;
let root = '';

before(async () => {
  root = await mkdtemp(join(tmpdir(), 'svc-stacks-'));
});
after(async () => {
  await removeTagged(engine, label);
  await rm(root, { recursive: true, force: true });
});

for (const name of SAMPLES) {
  test(`${name}: the generated plan builds on the engine, runs non-root and answers its body`, async (t) => {
    const images = await needStackImages(t);
    if (!images) return;
    const s = sample(name as SampleName);
    const dir = join(root, name);
    await mkdir(dir);
    await writeSample(s, dir);
    const plan = await planOfDir(dir);
    assert.equal(plan.stack, s.stack, JSON.stringify(plan));
    // Every image the plan names has a stand-in, so nothing is pulled from a registry.
    const map = stackImageMap(images);
    for (const ref of plan.images) assert.ok(map[ref], `no stand-in for ${ref}`);

    const tag = `svc-test/plan-${name}:${label}`;
    const built = await buildWithMap(engine, dir, plan.dockerfile, map, tag, label);
    assert.match(built.imageId, /^sha256:/);
    const cfg = (await engine.docker.getImage(tag).inspect()).Config;
    assert.ok(cfg.User && !/^(root|0)(:|$)/.test(cfg.User), `image user ${cfg.User}`);
    assert.ok(cfg.Env.includes(`PORT=${plan.port}`), cfg.Env.join(' '));

    const r = await runImage(engine, tag, plan.port, label);
    assert.equal(await fetchBody(engine, r, s.path), s.body);
    // Every process of the running app, as the host sees it (no user namespace remapping here).
    const top = await engine.docker.getContainer(r.id).top({ ps_args: '-o pid,uid,comm' });
    const col = (top.Titles as string[]).indexOf('UID');
    const uids = (top.Processes as string[][]).map((p) => p[col]);
    assert.ok(uids.length > 0 && uids.every((u) => u !== '0'), JSON.stringify(top.Processes));

    assert.deepEqual(
      await programsIn(engine, tag, label, s.absent),
      [],
      `build tools in the final image of ${name}`,
    );
    const files = await imagePaths(engine, tag, label, s.absentFiles);
    assert.deepEqual(
      Object.keys(files).filter((f) => files[f]),
      [],
      `files that must not reach the final image of ${name}`,
    );
  });
}
