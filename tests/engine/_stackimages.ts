// Local stand-ins for the runtime images generated builds start from (no registry is reachable
// here), mapped over the official references with SVC_IMAGE_MAP as an operator's mirror would be:
// - caddy:2-alpine -> svc-test/caddy:2: the Debian slim test base with the host's Caddy binary behind
//   /usr/bin/caddy, where the official image keeps it (the static stack copies it from there). Debian's
//   Caddy (2.6) predates the `persist_config` option the generated Caddyfile sets, so that path holds
//   a wrapper that drops the option before running the real binary;
// - node:22-bookworm-slim -> svc-test/node-shim:1: busybox with an `npm` that installs nothing, for
//   build stages whose commands the tests give as overrides (they exercise limits and slots, not node).
// Each is built once and labelled with the hash of what it was made from; a matching label skips it.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFile, mkdtemp, readFile, rm, writeFile, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { BASE_IMAGE, ensureBaseImage } from '../_support/docker.js';
import { ensureDbImages } from '../_support/dbimages.js';

const run = promisify(execFile);
const LABEL = 'svc.test.content-hash';
export const CADDY_TEST_IMAGE = 'svc-test/caddy:2';
export const NODE_SHIM_IMAGE = 'svc-test/node-shim:1';
const SLIM = 'svc-test/debian-slim:bookworm';

const CADDY_WRAPPER = `#!/bin/sh
# Test stand-in: Debian's Caddy 2.6 does not know persist_config (2.7+); the rest is as written.
if [ "$1" = run ] && [ "$2" = --config ] && [ -n "$3" ]; then
  cfg="$3"; shift 3
  mkdir -p /tmp/caddy && grep -v persist_config "$cfg" > /tmp/caddy/Caddyfile
  exec /usr/lib/caddy-real/caddy run --config /tmp/caddy/Caddyfile "$@"
fi
exec /usr/lib/caddy-real/caddy "$@"
`;

const NPM_SHIM =
  '#!/bin/sh\n# Test stand-in: dependencies are already "installed"; scripts are given as overrides.\nexit 0\n';

async function labelOf(tag: string): Promise<string | null> {
  try {
    const { stdout } = await run('docker', [
      'image',
      'inspect',
      '--format',
      `{{ index .Config.Labels "${LABEL}" }}`,
      '--',
      tag,
    ]);
    return stdout.trim();
  } catch {
    return null;
  }
}

async function build(
  tag: string,
  files: Record<string, string | { copyFrom: string }>,
  dockerfile: string,
): Promise<void> {
  const h = createHash('sha256').update(dockerfile);
  for (const [name, f] of Object.entries(files).sort())
    h.update(name).update(typeof f === 'string' ? f : await readFile(f.copyFrom));
  const hash = h.digest('hex');
  if ((await labelOf(tag)) === hash) return;
  const dir = await mkdtemp(join(tmpdir(), 'svc-stackimg-'));
  try {
    for (const [name, f] of Object.entries(files)) {
      if (typeof f === 'string') await writeFile(join(dir, name), f);
      else await copyFile(f.copyFrom, join(dir, name));
      await chmod(join(dir, name), 0o755);
    }
    await writeFile(join(dir, 'Dockerfile'), dockerfile);
    await run('docker', ['build', '-q', '--label', `${LABEL}=${hash}`, '-t', tag, '--', dir], {
      env: { ...process.env, DOCKER_BUILDKIT: '0' },
      timeout: 600_000,
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

let ready: Promise<Record<string, string>> | undefined;

/** Builds both images when needed; answers the SVC_IMAGE_MAP entries. */
export function ensureStackImages(): Promise<Record<string, string>> {
  ready ??= (async () => {
    await ensureBaseImage();
    // The slim Debian base comes with the database test images (scripts/test-images/build.sh).
    if ((await labelOf(SLIM)) === null) await ensureDbImages();
    await build(
      CADDY_TEST_IMAGE,
      { caddy: { copyFrom: '/usr/bin/caddy' }, wrapper: CADDY_WRAPPER },
      `FROM ${SLIM}\nCOPY caddy /usr/lib/caddy-real/caddy\nCOPY wrapper /usr/bin/caddy\n`,
    );
    await build(NODE_SHIM_IMAGE, { npm: NPM_SHIM }, `FROM ${BASE_IMAGE}\nCOPY npm /bin/npm\n`);
    return { 'caddy:2-alpine': CADDY_TEST_IMAGE, 'node:22-bookworm-slim': NODE_SHIM_IMAGE };
  })();
  return ready;
}
