// The control plane's real image, built from the repository's Dockerfile by
// scripts/docker/build-image.sh (debootstrap base, docker import, no registry). The script caches
// by a content hash of the image's inputs, so this costs a second or two when .ci/run (or an
// earlier test run) already built it from the same dist/ and node_modules/.
import { execFile } from 'node:child_process';
import { access, constants } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { TestContext } from 'node:test';
import { missing } from './ci.js';
import { DOCKER_SOCKET } from './docker.js';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const SCRIPT = `${REPO}scripts/docker/build-image.sh`;
const OVERRIDE = 'SVC_REQUIRE_CONTROL_IMAGE';

let built: Promise<{ ok: true; image: string } | { ok: false; problem: string }> | undefined;

async function canBuild(): Promise<string | null> {
  if (process.getuid?.() !== 0) return 'building the control plane image needs root (debootstrap)';
  try {
    await access('/usr/sbin/debootstrap', constants.X_OK);
  } catch {
    return 'debootstrap is not installed (Debian: apt-get install debootstrap)';
  }
  try {
    await access(`${REPO}dist/runtime/cli.js`, constants.R_OK);
  } catch {
    return 'dist/ is not built (npm run build)';
  }
  return null;
}

function build(): Promise<{ ok: true; image: string } | { ok: false; problem: string }> {
  built ??= (async () => {
    const problem = await canBuild();
    if (problem) return { ok: false as const, problem };
    const out = await new Promise<string>((resolve, reject) => {
      execFile(
        'bash',
        [SCRIPT, 'all'],
        {
          cwd: REPO,
          timeout: 30 * 60_000,
          maxBuffer: 64 * 1024 * 1024,
          env: { ...process.env, DOCKER_HOST: `unix://${DOCKER_SOCKET}` },
        },
        (err, stdout, stderr) => {
          if (err)
            reject(new Error(`scripts/docker/build-image.sh failed: ${err.message}\n${stderr.slice(-4000)}`));
          else resolve(stdout);
        },
      );
    });
    const image = /^image=(\S+)$/m.exec(out)?.[1];
    if (!image) throw new Error(`scripts/docker/build-image.sh printed no image=: ${out.slice(-2000)}`);
    return { ok: true as const, image };
  })();
  return built;
}

/**
 * The image's reference (tagged by its content hash), built if needed. Where it cannot be built
 * (not root, no debootstrap): a loud skip, or a failure under CI. A failed build always fails.
 */
export async function needControlImage(t: TestContext): Promise<string | null> {
  const r = await build();
  if (r.ok) return r.image;
  return missing(t, r.problem, OVERRIDE) || null;
}
