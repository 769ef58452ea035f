// Local stand-ins for the official runtime images that generated build plans start from (node,
// python, golang, distroless, caddy, php-fpm, composer, ruby), built from Debian's packages by
// scripts/test-images/stacks.sh (no registry is reachable here), and the SVC_IMAGE_MAP that maps
// every reference a plan can name (each supported version) to them. As with ./dbimages.ts, the
// build runs once per process, and the script's lock and content-hash labels make every later call,
// in any process, a few image inspections.
import type { TestContext } from 'node:test';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { needDocker } from './docker.js';
import { componentRequired } from './ci.js';
import { NODE_VERSIONS, nodeImage } from '#lib/buildplan/node.js';
import { PYTHON_VERSIONS } from '#lib/buildplan/python.js';
import { GO_VERSIONS } from '#lib/buildplan/go.js';
import { PHP_VERSIONS } from '#lib/buildplan/php.js';
import { RUBY_VERSIONS } from '#lib/buildplan/ruby.js';
import { CADDY_IMAGE } from '#lib/buildplan/caddy.js';

const STACKS = [
  'node',
  'python',
  'python-slim',
  'golang',
  'distroless',
  'caddy',
  'php',
  'composer',
  'ruby',
  'ruby-slim',
  'debian-slim',
] as const;
/** Stand-in name -> local image, e.g. python-slim -> svc-test/python:3.11-slim. */
export type StackImages = Record<(typeof STACKS)[number], string>;

const SCRIPT = fileURLToPath(new URL('../../../scripts/test-images/stacks.sh', import.meta.url));
export const stackImagesRequired = componentRequired('SVC_REQUIRE_DOCKER');

/** SVC_IMAGE_MAP for the stand-ins: every official reference a plan may write, at every version. */
export function stackImageMap(i: StackImages): Record<string, string> {
  const map: Record<string, string> = {
    'gcr.io/distroless/static-debian12': i.distroless,
    'debian:bookworm-slim': i['debian-slim'],
    [CADDY_IMAGE]: i.caddy,
    'composer:2': i.composer,
  };
  for (const v of NODE_VERSIONS) map[nodeImage(v)] = i.node;
  for (const v of PYTHON_VERSIONS)
    [map[`python:${v}-bookworm`], map[`python:${v}-slim-bookworm`]] = [i.python, i['python-slim']];
  for (const v of GO_VERSIONS) map[`golang:${v}-bookworm`] = i.golang;
  for (const v of PHP_VERSIONS) map[`php:${v}-fpm-bookworm`] = i.php;
  for (const v of RUBY_VERSIONS)
    [map[`ruby:${v}-bookworm`], map[`ruby:${v}-slim-bookworm`]] = [i.ruby, i['ruby-slim']];
  return map;
}

function parse(stdout: string): StackImages {
  const line = stdout.trim().split('\n').pop() ?? '';
  const m = JSON.parse(line) as Partial<StackImages>;
  for (const s of STACKS)
    if (typeof m[s] !== 'string' || !m[s]) throw new Error(`stacks.sh printed no image for ${s}: ${line}`);
  return m as StackImages;
}

type Outcome = { images: StackImages } | { skip: string };
let building: Promise<Outcome> | undefined;

function build(): Promise<Outcome> {
  building ??= new Promise<Outcome>((resolve, reject) => {
    // A cold build (ten images, package installs from the Debian mirror) takes a few minutes.
    execFile(SCRIPT, [], { timeout: 30 * 60_000, maxBuffer: 256 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (!error) {
        const ready = String(stderr)
          .split('\n')
          .find((l) => l.includes('images ready in'));
        if (ready) console.error(`[stackimages] ${ready}`);
        try {
          resolve({ images: parse(String(stdout)) });
        } catch (e) {
          reject(e as Error);
        }
        return;
      }
      const tail = String(stderr).split('\n').slice(-40).join('\n');
      // A machine without root or debootstrap cannot make the Debian layer: a skip on a laptop.
      const why = process.getuid?.() !== 0 ? 'a cold build runs debootstrap, which needs root' : null;
      if (why && !stackImagesRequired) resolve({ skip: why });
      else
        reject(
          new Error(`building the stack test images failed (${error.message.split('\n')[0]}):\n${tail}`),
        );
    });
  });
  return building;
}

/** The stand-ins, built if needed; throws when they cannot be built (for the bench). */
export async function ensureStackImages(): Promise<StackImages> {
  const o = await build();
  if ('skip' in o) throw new Error(`stack test images unavailable: ${o.skip}`);
  return o.images;
}

/**
 * Call first in a test that builds a generated Dockerfile: the stand-ins, or null after skipping
 * loudly (no engine, or no way to build them here). Under CI every such case is a failure.
 */
export async function needStackImages(t: TestContext): Promise<StackImages | null> {
  if (!(await needDocker(t))) return null;
  const o = await build();
  if ('images' in o) return o.images;
  console.error(`\n*** SKIPPING ${t.name}: stack test images cannot be built: ${o.skip} ***\n`);
  t.skip(o.skip);
  return null;
}
