// Plain files (index.html at the root or in public/) served by Caddy, dotfiles left out.
import { CADDY_ARGV, CADDY_ENV, CADDY_IMAGE, COPY_CADDY, caddyfile, writeCaddyfile } from './caddy.js';
import { showArgv } from './command.js';
import { Dockerfile } from './dockerfile.js';
import type { RepoFiles } from './files.js';
import { PlanError, type Plan, type StackOverride } from './types.js';
import { port as checkPort, relPath } from './validate.js';

const PORT = 8080;
export const STATIC_MARKERS = ['index.html', 'public/index.html'];

export async function planStatic(files: RepoFiles, o: StackOverride | undefined): Promise<Plan | string | null> {
  const warnings: string[] = [];
  let dir: string | null = null;
  if (o?.publish_dir !== undefined) {
    dir = relPath('(override)', 'publish_dir', o.publish_dir);
    if (!(await files.exists(dir))) throw new PlanError('(override)', 'publish_dir', `"${dir}" is not a folder of the repository`);
  } else if (await files.exists('index.html')) dir = '.';
  else if (await files.exists('public/index.html')) dir = 'public';
  if (dir === null) return null;
  for (const k of ['install', 'build', 'start'] as const) if (o?.[k] !== undefined) warnings.push(`${k} is ignored for plain files without a package.json`);
  const p = o?.port !== undefined ? checkPort('(override)', 'port', o.port) : PORT;
  const df = new Dockerfile();
  df.from(CADDY_IMAGE);
  df.run(`${COPY_CADDY} && ${writeCaddyfile(caddyfile(p, ['root * /srv', 'encode gzip', 'file_server']))}`);
  df.copy([dir === '.' ? '.' : dir], '/srv');
  // .git, .env and their kind are repository plumbing, not pages; .well-known is meant to be served.
  df.run("find /srv -mindepth 1 -name '.*' ! -name .well-known -prune -exec rm -rf {} +");
  df.env({ PORT: p, ...CADDY_ENV })
    .user('65532:65532')
    .expose(p)
    .cmd(CADDY_ARGV);
  return {
    stack: 'static',
    detected_from: dir === '.' ? ['index.html'] : [`${dir}/index.html`],
    runtime: { name: 'caddy', version: '2', image: CADDY_IMAGE },
    images: df.images,
    install: null,
    build: null,
    start: showArgv(CADDY_ARGV),
    port: p,
    dockerfile: df.text(),
    warnings,
  };
}
