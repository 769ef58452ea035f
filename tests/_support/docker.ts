// Shared by every test that needs the real Docker engine. On a machine without an engine the
// tests skip loudly; under CI (see ./ci.ts) or SVC_REQUIRE_DOCKER=1 a missing engine is a failure.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtemp, mkdir, copyFile, symlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { componentRequired, missing } from './ci.js';

const run = promisify(execFile);
export const BASE_IMAGE = 'svc-test/busybox:latest';
export const DOCKER_SOCKET = process.env.SVC_DOCKER_SOCKET ?? '/var/run/docker.sock';

let reachable: Promise<boolean> | undefined;

export function dockerReachable(): Promise<boolean> {
  reachable ??= run(
    'docker',
    ['-H', `unix://${DOCKER_SOCKET}`, 'version', '--format', '{{.Server.Version}}'],
    { timeout: 10_000 },
  ).then(
    () => true,
    () => false,
  );
  return reachable;
}

export const dockerRequired = componentRequired('SVC_REQUIRE_DOCKER');

/** Call first in a Docker test: skips (loudly) without an engine, or fails under CI. */
export async function needDocker(t: TestContext): Promise<boolean> {
  if (await dockerReachable()) return true;
  return missing(t, `no Docker engine answers at ${DOCKER_SOCKET}`, 'SVC_REQUIRE_DOCKER');
}

let baseImage: Promise<void> | undefined;

/** Imports a tiny busybox root filesystem (Debian's busybox-static) as BASE_IMAGE, once. */
export function ensureBaseImage(): Promise<void> {
  baseImage ??= (async () => {
    try {
      await run('docker', ['image', 'inspect', BASE_IMAGE], { timeout: 10_000 });
      return;
    } catch {
      /* not there yet */
    }
    const root = await mkdtemp(join(tmpdir(), 'svc-busybox-'));
    try {
      await mkdir(join(root, 'bin'));
      await mkdir(join(root, 'tmp'));
      await copyFile('/usr/bin/busybox', join(root, 'bin', 'busybox'));
      const { stdout } = await run('/usr/bin/busybox', ['--list']);
      for (const name of stdout.split('\n').filter((n) => n && n !== 'busybox')) {
        await symlink('busybox', join(root, 'bin', name));
      }
      await run(
        'sh',
        ['-c', 'tar -C "$1" -c . | docker import -c "ENV PATH=/bin" - "$2"', 'sh', root, BASE_IMAGE],
        { timeout: 60_000 },
      );
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  })();
  return baseImage;
}

/** needDocker plus the base image: a failed import fails the test, it never passes silently. */
export async function needEngine(t: TestContext): Promise<boolean> {
  if (!(await needDocker(t))) return false;
  await ensureBaseImage();
  return true;
}
