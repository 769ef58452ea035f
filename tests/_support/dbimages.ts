// Local PostgreSQL, MariaDB and Redis images for tests, built from Debian's packages by
// scripts/test-images/build.sh (no registry is reachable here). They keep the official images'
// conventions, so a test maps the catalog's official references to these. The build runs once
// per process; across the parallel test processes the script's lock and content-hash cache
// make every later call a few image inspections.
import type { TestContext } from 'node:test';
import { execFile } from 'node:child_process';
import { access, constants } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { needDocker } from './docker.js';

export type DbEngine = 'postgres' | 'mariadb' | 'redis';
/** Engine -> local image reference, e.g. postgres -> svc-test/postgres:15. */
export type DbImages = Record<DbEngine, string>;

const BUILD_SCRIPT = fileURLToPath(new URL('../../../scripts/test-images/build.sh', import.meta.url));
export const dbImagesRequired = process.env.CI === 'true' || process.env.SVC_REQUIRE_DOCKER === '1';

interface BuildOutput {
  stdout: string;
  stderr: string;
  error: (Error & { code?: unknown }) | null;
}

function runBuild(): Promise<BuildOutput> {
  return new Promise((resolve) => {
    // A cold build (debootstrap + three package installs) takes a few minutes on a slow mirror.
    execFile(
      BUILD_SCRIPT,
      [],
      { timeout: 30 * 60_000, maxBuffer: 256 * 1024 * 1024 },
      (error, stdout, stderr) => {
        resolve({ stdout: String(stdout), stderr: String(stderr), error });
      },
    );
  });
}

/** Why a cold build cannot run on this machine, or null when it can. */
async function missingPrerequisite(): Promise<string | null> {
  const onPath = async (bin: string): Promise<boolean> => {
    for (const dir of (process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin').split(':')) {
      try {
        await access(`${dir}/${bin}`, constants.X_OK);
        return true;
      } catch {
        /* next */
      }
    }
    return false;
  };
  if (!(await onPath('flock'))) return 'flock is missing (Debian: util-linux)';
  if (!(await onPath('debootstrap'))) return 'debootstrap is missing (Debian: debootstrap)';
  if (process.getuid?.() !== 0) return 'a cold build runs debootstrap, which needs root';
  return null;
}

function parseMap(stdout: string): DbImages {
  const line = stdout.trim().split('\n').pop() ?? '';
  const map = JSON.parse(line) as Partial<DbImages>;
  for (const e of ['postgres', 'mariadb', 'redis'] as const) {
    if (typeof map[e] !== 'string' || !map[e]) throw new Error(`build.sh printed no image for ${e}: ${line}`);
  }
  return map as DbImages;
}

type Outcome = { images: DbImages } | { skip: string };
let building: Promise<Outcome> | undefined;

function build(): Promise<Outcome> {
  building ??= (async (): Promise<Outcome> => {
    const r = await runBuild();
    if (!r.error) {
      const ready = r.stderr.split('\n').find((l) => l.includes('images ready in'));
      if (ready) console.error(`[dbimages] ${ready}`);
      return { images: parseMap(r.stdout) };
    }
    const problem = await missingPrerequisite();
    if (problem && !dbImagesRequired) return { skip: problem };
    const tail = r.stderr.split('\n').slice(-40).join('\n');
    throw new Error(
      `building the database test images failed (${r.error.message.split('\n')[0]})${problem ? `; ${problem}` : ''}:\n${tail}`,
    );
  })();
  return building;
}

/** The local database images, built if needed; throws when they cannot be built. */
export async function ensureDbImages(): Promise<DbImages> {
  const o = await build();
  if ('skip' in o) throw new Error(`database test images unavailable: ${o.skip}`);
  return o.images;
}

/**
 * Call first in a test that runs database containers: the images, or null after skipping
 * loudly (no engine, or no way to build here). Under CI every such case is a failure.
 */
export async function needDbImages(t: TestContext): Promise<DbImages | null> {
  if (!(await needDocker(t))) return null;
  const o = await build();
  if ('images' in o) return o.images;
  console.error(`\n*** SKIPPING ${t.name}: database test images cannot be built: ${o.skip} ***\n`);
  t.skip(o.skip);
  return null;
}
