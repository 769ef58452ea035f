// Where a server install puts things: one place, read by the installer, the doctor and every
// command that looks for the service's configuration (runtime/host-config.ts).
import { join } from 'node:path';

export const DEFAULT_ENV_FILE = '/etc/svc/svc.env';
export const CONFIG_DIR = '/etc/svc';
export const DATA_DIR = '/var/lib/svc';
export const UNIT_NAME = 'svc.service';
export const UNIT_FILE = `/etc/systemd/system/${UNIT_NAME}`;
/** What `systemctl enable` writes for a unit with WantedBy=multi-user.target. */
export const WANTS_DIR = '/etc/systemd/system/multi-user.target.wants';
/** Debian's caddy package ships both; caddy.service (the Caddyfile one) is enabled by the package. */
export const CADDY_API_UNIT = 'caddy-api.service';
export const CADDY_UNIT = 'caddy.service';
export const VENDOR_UNIT_DIR = '/lib/systemd/system';
/** A drop-in beside Debian's caddy-api.service: Caddy's admin endpoint on a unix socket (texts.ts says how). */
export const CADDY_API_DROPIN_DIR = `/etc/systemd/system/${CADDY_API_UNIT}.d`;
export const CADDY_ADMIN_DROPIN = `${CADDY_API_DROPIN_DIR}/svc-admin-socket.conf`;
/** Where install puts Caddy's admin endpoint, in Caddy's syntax (SVC_CADDY_ADMIN's value). */
export const CADDY_ADMIN_SOCKET = 'unix//run/caddy/admin.sock';
export const SYSCTL_FILE = '/etc/sysctl.d/60-svc.conf';
/** What install enabled or disabled that was not so before, so uninstall reverts only that. */
export const MANIFEST_FILE = '/etc/svc/install.json';
export const DOCKER_SOCKET = '/var/run/docker.sock';

export const wantsLink = (unit: string) => `${WANTS_DIR}/${unit}`;

/** A host path inside `root` ("/" is the host itself). */
export function under(root: string, path: string): string {
  return root === '/' ? path : join(root, path);
}
