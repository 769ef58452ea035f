// What lets a container escape to the host, decided in one place.
import { posix } from 'node:path';

/**
 * Capabilities a compose file may add: an allow-list, so a capability the kernel gains later is
 * refused until someone decides about it. Docker's default set (adding one only undoes a
 * cap_drop), plus a few that act only on the container's own processes, memory or network
 * namespace:
 * - NET_ADMIN: routes, firewall and interfaces of the container's own network namespace (VPN
 *   and proxy images need it); warned, because it is broad inside that namespace.
 * - SYS_NICE: priorities and CPU affinity; with its own PID namespace only of its own processes,
 *   but real-time scheduling can starve the host's CPU: warned.
 * - SYS_RESOURCE: lifts the container's own rlimits and filesystem reserved space: warned.
 * - IPC_LOCK: locks memory (databases, vaults); bounded by the container's memory limit.
 * - NET_BROADCAST: broadcast and multicast on its own interfaces.
 * Everything else (SYS_ADMIN, SYS_MODULE, SYS_PTRACE, SYS_RAWIO, DAC_READ_SEARCH, BPF, PERFMON,
 * MAC_*, SYSLOG, SYS_TIME, SYS_BOOT, ALL...) is refused.
 */
export const DOCKER_DEFAULT_CAPS = new Set([
  'CHOWN',
  'DAC_OVERRIDE',
  'FOWNER',
  'FSETID',
  'KILL',
  'SETGID',
  'SETUID',
  'SETPCAP',
  'NET_BIND_SERVICE',
  'NET_RAW',
  'SYS_CHROOT',
  'MKNOD',
  'AUDIT_WRITE',
  'SETFCAP',
]);
export const WARNED_CAPS = new Map([
  ['NET_ADMIN', "it controls the container's own network namespace"],
  ['SYS_NICE', "real-time scheduling can starve the host's CPU"],
  ['SYS_RESOURCE', "it lifts the container's resource limits"],
]);
export const ALLOWED_CAPS = new Set([
  ...DOCKER_DEFAULT_CAPS,
  ...WARNED_CAPS.keys(),
  'IPC_LOCK',
  'NET_BROADCAST',
]);

export function normaliseCap(cap: string): string {
  return cap.trim().toUpperCase().replace(/^CAP_/, '');
}

/**
 * YAML 1.1 and the compose CLI read "yes", "on", "true", "1" (any case) as true: so does the
 * policy, whatever the YAML parser made of them.
 */
export function truthy(v: unknown): boolean {
  if (v === true || v === 1) return true;
  return typeof v === 'string' && ['true', 'yes', 'y', 'on', '1'].includes(v.trim().toLowerCase());
}

/** The values that clearly mean false; anything else set on a dangerous switch is refused. */
export function falsy(v: unknown): boolean {
  if (v === false || v === 0 || v === null || v === undefined) return true;
  return typeof v === 'string' && ['false', 'no', 'n', 'off', '0', ''].includes(v.trim().toLowerCase());
}

/**
 * security_opt entries that turn confinement off, change the SELinux user, role or type (a type
 * like spc_t is unconfined), or load a host file as a profile. Allowed: no-new-privileges, and
 * an SELinux level (MCS categories only narrow what the container reaches).
 */
export function refusedSecurityOpt(opt: string): string | null {
  const m = /^\s*([A-Za-z-]+)\s*[=:]\s*(.*)$/s.exec(opt);
  const key = (m ? m[1]! : opt).trim().toLowerCase();
  const value = (m ? m[2]! : '').trim().toLowerCase();
  if (key === 'no-new-privileges')
    return value === '' || falsy(value) || truthy(value)
      ? null
      : `unknown value for no-new-privileges "${opt}"`;
  if (value.includes('unconfined')) return `${key} unconfined disables the container's confinement`;
  if (key === 'label') {
    if (value === 'disable') return 'label=disable turns SELinux separation off';
    if (/^level[:=]/.test(value)) return null;
    return `label "${value}" changes the container's SELinux user, role or type (spc_t and the like run unconfined)`;
  }
  if (key === 'seccomp' || key === 'apparmor')
    return `custom ${key} profiles are not allowed (they could loosen confinement)`;
  if (key === 'systempaths') return `systempaths "${value}" exposes the host's /proc and /sys paths`;
  return `unknown security option "${opt}"`;
}

export const DEFAULT_SOCKET_PATHS = ['/var/run/docker.sock', '/run/docker.sock'];

export interface BindPolicy {
  /** Absolute host directories under which binds are allowed. Default: none. */
  allowedBindRoots: string[];
  /** Docker sockets that must never be mounted, nor any directory holding one. */
  dockerSocketPaths: string[];
}

function within(root: string, p: string): boolean {
  const rel = posix.relative(root, p);
  return rel === '' || (!rel.startsWith('..') && !posix.isAbsolute(rel));
}

/**
 * Checks a bind source as written. Relative sources (`./x`, `../x`) resolve inside the app's
 * working copy and may not climb out of it; absolute ones need an allowed root. Returns a
 * reason when refused, else the normalised source (relative to the working copy, or absolute).
 */
export function checkBindSource(
  source: string,
  policy: BindPolicy,
): { ok: true; source: string; relative: boolean } | { ok: false; reason: string } {
  if (source.startsWith('~'))
    return { ok: false, reason: `bind source "${source}" points into a home directory on the host` };
  if (source.includes('\0')) return { ok: false, reason: 'bind source contains a NUL byte' };
  if (posix.isAbsolute(source)) {
    const abs = posix.normalize(source);
    for (const sock of policy.dockerSocketPaths) {
      if (within(abs, sock) || within(sock, abs))
        return {
          ok: false,
          reason: `bind mounts of the Docker socket (${sock}) or a directory holding it are refused`,
        };
    }
    if (!policy.allowedBindRoots.some((root) => within(posix.normalize(root), abs))) {
      return {
        ok: false,
        reason: `bind mount of host path "${abs}" is outside the allowed roots${policy.allowedBindRoots.length ? ` (${policy.allowedBindRoots.join(', ')})` : ' (none are allowed)'}`,
      };
    }
    return { ok: true, source: abs, relative: false };
  }
  const rel = posix.normalize(source);
  if (rel === '..' || rel.startsWith('../'))
    return { ok: false, reason: `bind source "${source}" escapes the app's working copy` };
  if (/docker\.sock$/.test(rel)) return { ok: false, reason: 'bind mounts of a Docker socket are refused' };
  return { ok: true, source: rel, relative: true };
}

/** Same containment rule for build contexts, dockerfiles and env_file paths. */
export function checkRelativePath(p: string): string | null {
  if (p.includes('\0')) return null;
  if (posix.isAbsolute(p) || p.startsWith('~')) return null;
  const rel = posix.normalize(p);
  if (rel === '..' || rel.startsWith('../')) return null;
  return rel;
}
