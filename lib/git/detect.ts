// What a repository holds: its compose file (or a lone Dockerfile) and its env example.
import { readFile, lstat, realpath, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { parseCompose, parseDotenv, SINGLE_SERVICE, type Finding } from '../compose/index.js';
import { resolveInside } from '../util/paths.js';

export const COMPOSE_FILES = ['compose.yaml', 'compose.yml', 'docker-compose.yml', 'docker-compose.yaml'];
export const ENV_EXAMPLE_FILES = ['.env.example', '.env.sample', 'env.example', '.env.template'];
const MAX_FILE = 1024 * 1024;

export interface Detection {
  /** Path of the compose file relative to the repository root, or null. */
  compose_path: string | null;
  /** Path of the Dockerfile used when there is no compose file, or null. */
  dockerfile: string | null;
  services: string[];
  findings: Finding[];
}

async function isFile(p: string): Promise<boolean> {
  try {
    return (await lstat(p)).isFile();
  } catch {
    return false;
  }
}

/**
 * A compose file of the repository: the real path when it is a regular file inside it, 'outside'
 * when it (or a folder on its way) is a symlink that leads out of the repository, null when absent.
 */
async function composeFile(dir: string, name: string): Promise<string | 'outside' | null> {
  if (name.startsWith('/') || name.split('/').includes('..')) return 'outside';
  const root = await realpath(dir);
  const p = await resolveInside(root, name);
  if (p === null) return 'outside';
  try {
    return (await stat(p)).isFile() ? p : null;
  } catch {
    return null;
  }
}

/** Reads the compose file `name` of the checkout in dir, refusing one that resolves outside it. */
export async function readComposeFile(dir: string, name: string): Promise<string> {
  const p = await composeFile(dir, name);
  if (p === null || p === 'outside')
    throw new Error(`compose file ${name} ${p === null ? 'is missing' : 'resolves outside the repository'}`);
  if ((await stat(p)).size > MAX_FILE) throw new Error(`compose file ${name} is larger than 1 MiB`);
  return readFile(p, 'utf8');
}

/**
 * Looks up compose.yaml, compose.yml, docker-compose.yml, docker-compose.yaml, then a
 * Dockerfile alone (a one-service stack named `app`). `composePath` (the app's setting) wins
 * when given. A compose file may be a symlink within the repository; one that leads outside it
 * (to a host file) is refused, never read.
 */
export async function detectCompose(
  dir: string,
  opts: { composePath?: string; env?: Record<string, string> } = {},
): Promise<Detection> {
  const candidates = opts.composePath ? [opts.composePath] : COMPOSE_FILES;
  for (const name of candidates) {
    const p = await composeFile(dir, name);
    if (p === null) continue;
    if (p === 'outside') {
      return {
        compose_path: name,
        dockerfile: null,
        services: [],
        findings: [
          {
            level: 'error',
            key: '(file)',
            message: `compose file ${name} resolves outside the repository (a symlink to a host path?); refused`,
          },
        ],
      };
    }
    if ((await stat(p)).size > MAX_FILE) {
      return {
        compose_path: name,
        dockerfile: null,
        services: [],
        findings: [{ level: 'error', key: '(file)', message: 'compose file is larger than 1 MiB' }],
      };
    }
    const r = parseCompose(await readFile(p, 'utf8'), { env: opts.env ?? {} });
    return {
      compose_path: name,
      dockerfile: null,
      services: r.model ? Object.keys(r.model.services) : [],
      findings: r.findings,
    };
  }
  if (await isFile(join(dir, 'Dockerfile')))
    return { compose_path: null, dockerfile: 'Dockerfile', services: [SINGLE_SERVICE], findings: [] };
  return {
    compose_path: null,
    dockerfile: null,
    services: [],
    findings: [
      {
        level: 'error',
        key: '(repository)',
        message: 'no compose file and no Dockerfile at the repository root',
      },
    ],
  };
}

/** Reads the first env example file found into [{key, value}]; empty when there is none. */
export async function envExample(dir: string): Promise<{ key: string; value: string }[]> {
  for (const name of ENV_EXAMPLE_FILES) {
    const p = join(dir, name);
    if (!(await isFile(p)) || (await lstat(p)).size > MAX_FILE) continue;
    const seen = new Map<string, string>();
    for (const e of parseDotenv(await readFile(p, 'utf8')))
      if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(e.key)) seen.set(e.key, e.value);
    return [...seen].map(([key, value]) => ({ key, value }));
  }
  return [];
}
