// The stand-in for registry:2 (scripts/test-images/registry: Debian's docker-registry package on
// the stack images' Debian layer), built once per process and only when its content changed (a
// label holds the hash of its Dockerfile). SVC_IMAGE_MAP maps the official reference to it.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ensureStackImages } from './stackimages.js';

const run = promisify(execFile);
const DIR = fileURLToPath(new URL('../../../scripts/test-images/registry/', import.meta.url));
export const REGISTRY_TEST_IMAGE = 'svc-test/stack-registry:2';
const LABEL = 'svc.test.content-hash';

let building: Promise<string> | undefined;

export function ensureRegistryImage(): Promise<string> {
  building ??= (async () => {
    await ensureStackImages(); // the Debian layer it starts from
    const hash = createHash('sha256')
      .update(readFileSync(`${DIR}Dockerfile`))
      .digest('hex');
    const have = await run('docker', [
      'image',
      'inspect',
      '--format',
      `{{ index .Config.Labels "${LABEL}" }}`,
      REGISTRY_TEST_IMAGE,
    ])
      .then((r) => r.stdout.trim())
      .catch(() => '');
    if (have !== hash)
      await run('docker', ['build', '--label', `${LABEL}=${hash}`, '--tag', REGISTRY_TEST_IMAGE, DIR], {
        env: { ...process.env, DOCKER_BUILDKIT: '0' },
        timeout: 15 * 60_000,
        maxBuffer: 64 << 20,
      });
    return REGISTRY_TEST_IMAGE;
  })();
  return building;
}
