// Caddy serves static output (and fronts PHP-FPM) as a non-root user on an unprivileged port.
import { showArgv } from './command.js';
import type { Dockerfile } from './dockerfile.js';
import type { Plan } from './types.js';

export const CADDY_IMAGE = 'caddy:2-alpine';
export const CADDY_ARGV = [
  '/usr/local/bin/caddy',
  'run',
  '--config',
  '/etc/caddy/Caddyfile',
  '--adapter',
  'caddyfile',
];

/**
 * The Caddyfile for `port`: `site` lines go inside the site block. Constants only, no repository text.
 * Only global options Caddy 2.6 knows (Debian bookworm's, which an image map may point at): with the
 * admin endpoint off nothing changes the config at run time, so persist_config would only spare one
 * autosave file under the writable XDG folder, and 2.6 refuses the option.
 */
export function caddyfile(port: number, site: string[]): string[] {
  return ['{', '  admin off', '  auto_https off', '}', `:${port} {`, ...site.map((l) => `  ${l}`), '}'];
}

/** A shell line that writes `lines` as the Caddyfile (none holds a quote: they are ours). */
export const writeCaddyfile = (lines: string[]) =>
  `mkdir -p /etc/caddy && printf '%s\\n' ${lines.map((l) => `'${l}'`).join(' ')} > /etc/caddy/Caddyfile`;

/**
 * The image's binary carries a file capability (to bind low ports), and exec of such a binary fails
 * when the container's capabilities are dropped; a plain `cp` carries none, and 8080 needs none.
 */
export const COPY_CADDY = 'cp /usr/bin/caddy /usr/local/bin/caddy';

/** Caddy keeps its state under XDG folders; the non-root user may write only /tmp. */
export const CADDY_ENV = { XDG_CONFIG_HOME: '/tmp/caddy', XDG_DATA_HOME: '/tmp/caddy' };

interface Served {
  /** Copied to /srv: from stage `from`, or from the build context. */
  src: string;
  from?: string;
  /** Site lines before the file_server. */
  site?: string[];
  /** A constant shell line run on the copy. */
  tidy?: string;
}

/** The final stage in which Caddy serves the files; answers what the plan says of the server. */
export function caddyStage(
  df: Dockerfile,
  port: number,
  files: Served,
): Pick<Plan, 'runtime' | 'start' | 'port'> {
  const site = ['root * /srv', 'encode gzip', ...(files.site ?? []), 'file_server'];
  df.from(CADDY_IMAGE);
  df.run(`${COPY_CADDY} && ${writeCaddyfile(caddyfile(port, site))}`);
  df.copy([files.src], '/srv', { from: files.from });
  if (files.tidy !== undefined) df.run(files.tidy);
  df.env({ PORT: port, ...CADDY_ENV })
    .user('65532:65532')
    .expose(port)
    .cmd(CADDY_ARGV);
  return { runtime: { name: 'caddy', version: '2', image: CADDY_IMAGE }, start: showArgv(CADDY_ARGV), port };
}
