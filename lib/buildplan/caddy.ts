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

/** A shell line that writes `lines` as dir/Caddyfile (none holds a quote: they are ours). */
export const writeCaddyfile = (lines: string[], dir = '/etc/caddy') =>
  `mkdir -p ${dir} && printf '%s\\n' ${lines.map((l) => `'${l}'`).join(' ')} > ${dir}/Caddyfile`;

/**
 * The image's binary carries a file capability (to bind low ports), and exec of such a binary fails
 * when the container's capabilities are dropped; 8080 needs none. Whether a COPY keeps the capability
 * depends on the builder (the legacy builder's chown happens to clear it); a plain `cp` never copies
 * it. Copied into a stage of its own, so the final image carries Caddy once.
 */
export const copyCaddy = (to: string) => `cp /usr/bin/caddy ${to}`;

/** Caddy keeps its state under XDG folders; the non-root user may write only /tmp. */
export const CADDY_ENV = { XDG_CONFIG_HOME: '/tmp/caddy', XDG_DATA_HOME: '/tmp/caddy' };

/** The static binary's final stage: no shell, no package manager, the nonroot user 65532. */
export const DISTROLESS = 'gcr.io/distroless/static-debian12';

interface Served {
  /** Copied to /srv: from stage `from`, or from the build context. */
  src: string;
  from?: string;
  /** Site lines before the file_server. */
  site?: string[];
  /** Leave dotfiles (.git, .env) out of what is served; .well-known is meant to be served. */
  tidy?: boolean;
}

/**
 * Caddy serving the files: a `site` stage assembles the final tree under /out (the binary without
 * its capability, the Caddyfile, the files), and the final stage is distroless with that tree alone,
 * so Caddy is carried once and nothing else of the caddy image (its shell, its package database) is.
 * Without files to tidy, the binary is copied first, so a change to the files reuses that layer.
 */
export function caddyStage(
  df: Dockerfile,
  port: number,
  files: Served,
): Pick<Plan, 'runtime' | 'start' | 'port'> {
  const site = ['root * /srv', 'encode gzip', ...(files.site ?? []), 'file_server'];
  df.from(CADDY_IMAGE, 'site');
  const setUp = `mkdir -p /out/usr/local/bin && ${copyCaddy('/out/usr/local/bin/caddy')} && ${writeCaddyfile(caddyfile(port, site), '/out/etc/caddy')}`;
  // Files to tidy need a shell after their copy anyway: one step then, rather than two.
  if (files.tidy) {
    df.copy([files.src], '/out/srv', { from: files.from });
    df.run(`${setUp} && find /out/srv -mindepth 1 -name '.*' ! -name .well-known -prune -exec rm -rf {} +`);
  } else {
    df.run(setUp);
    df.copy([files.src], '/out/srv', { from: files.from });
  }
  df.from(DISTROLESS);
  df.env({ PORT: port, ...CADDY_ENV })
    .user('65532:65532')
    .expose(port)
    .cmd(CADDY_ARGV);
  df.copy(['/out/'], '/', { from: 'site' });
  return { runtime: { name: 'caddy', version: '2', image: CADDY_IMAGE }, start: showArgv(CADDY_ARGV), port };
}
