// What a repository holds: its compose file (or a lone Dockerfile) and its env example.
import { readFile, lstat } from 'node:fs/promises';
import { join } from 'node:path';
import { parseCompose, parseDotenv, SINGLE_SERVICE, type Finding } from '../compose/index.js';

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
 * Looks up compose.yaml, compose.yml, docker-compose.yml, docker-compose.yaml, then a
 * Dockerfile alone (a one-service stack named `app`). `composePath` (the app's setting) wins
 * when given. Symlinks are not followed: a repository cannot point us at host files.
 */
export async function detectCompose(dir: string, opts: { composePath?: string; env?: Record<string, string> } = {}): Promise<Detection> {
  const candidates = opts.composePath ? [opts.composePath] : COMPOSE_FILES;
  for (const name of candidates) {
    if (name.startsWith('/') || name.split('/').includes('..')) continue;
    const p = join(dir, name);
    if (!(await isFile(p))) continue;
    if ((await lstat(p)).size > MAX_FILE) {
      return { compose_path: name, dockerfile: null, services: [], findings: [{ level: 'error', key: '(file)', message: 'compose file is larger than 1 MiB' }] };
    }
    const r = parseCompose(await readFile(p, 'utf8'), { env: opts.env ?? {} });
    return { compose_path: name, dockerfile: null, services: r.model ? Object.keys(r.model.services) : [], findings: r.findings };
  }
  if (await isFile(join(dir, 'Dockerfile'))) return { compose_path: null, dockerfile: 'Dockerfile', services: [SINGLE_SERVICE], findings: [] };
  return { compose_path: null, dockerfile: null, services: [], findings: [{ level: 'error', key: '(repository)', message: 'no compose file and no Dockerfile at the repository root' }] };
}

/** Reads the first env example file found into [{key, value}]; empty when there is none. */
export async function envExample(dir: string): Promise<{ key: string; value: string }[]> {
  for (const name of ENV_EXAMPLE_FILES) {
    const p = join(dir, name);
    if (!(await isFile(p)) || (await lstat(p)).size > MAX_FILE) continue;
    const seen = new Map<string, string>();
    for (const e of parseDotenv(await readFile(p, 'utf8'))) if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(e.key)) seen.set(e.key, e.value);
    return [...seen].map(([key, value]) => ({ key, value }));
  }
  return [];
}
