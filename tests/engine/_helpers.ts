// Helpers shared by the engine tests: unique app names, cleanup by label, exec with demuxed output, polling.
import { randomBytes } from 'node:crypto';
import { PassThrough } from 'node:stream';
import type { Engine } from '#lib/docker/index.js';
import { stackRemove } from '#lib/docker/index.js';
import { poll } from '../_support/wait.js';

export function appName(prefix = 't'): string {
  return `${prefix}-${randomBytes(4).toString('hex')}`;
}

export async function cleanup(engine: Engine, apps: Iterable<string>): Promise<void> {
  for (const app of apps) {
    try {
      await stackRemove(engine, app, { volumes: true });
    } catch (e) {
      console.error(`cleanup of ${app} failed:`, e);
    }
  }
}

/** Removes the containers, images and volumes a test made itself and labelled svc.test=<tag>. */
export async function removeTagged(engine: Engine, tag: string): Promise<void> {
  const d = engine.docker;
  const filters = { label: [`svc.test=${tag}`] };
  for (const ct of await d.listContainers({ all: true, filters }))
    await d
      .getContainer(ct.Id)
      .remove({ force: true, v: true })
      .catch(() => {});
  for (const im of await d.listImages({ filters }))
    await d
      .getImage(im.Id)
      .remove({ force: true })
      .catch(() => {});
  for (const v of (await d.listVolumes({ filters })).Volumes ?? [])
    await d
      .getVolume(v.Name)
      .remove()
      .catch(() => {});
}

/** Runs a command in a container; returns raw stdout bytes and the exit code. */
export async function execIn(
  engine: Engine,
  id: string,
  cmd: string[],
): Promise<{ stdout: Buffer; stderr: string; exitCode: number }> {
  const exec = await engine.docker
    .getContainer(id)
    .exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({ hijack: true, stdin: false });
  const out = new PassThrough();
  const err = new PassThrough();
  const chunks: Buffer[] = [];
  const errChunks: Buffer[] = [];
  out.on('data', (c: Buffer) => chunks.push(c));
  err.on('data', (c: Buffer) => errChunks.push(c));
  engine.docker.modem.demuxStream(stream, out, err);
  await new Promise<void>((resolve, reject) => {
    stream.on('end', resolve);
    stream.on('close', resolve);
    stream.on('error', reject);
  });
  let info = await exec.inspect();
  for (let i = 0; i < 50 && info.Running; i++) {
    await new Promise((r) => setTimeout(r, 100));
    info = await exec.inspect();
  }
  return {
    stdout: Buffer.concat(chunks),
    stderr: Buffer.concat(errChunks).toString(),
    exitCode: info.ExitCode ?? -1,
  };
}

/** Polls until fn returns a truthy value; generous deadline, no timing assertions. */
export function until<T>(
  what: string,
  fn: () => Promise<T | undefined | null | false>,
  timeoutMs = 90_000,
  everyMs = 500,
): Promise<T> {
  return poll(what, fn, timeoutMs, everyMs) as Promise<T>;
}
