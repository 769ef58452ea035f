// What lets a container escape to the host, decided in one place.
//
// Capabilities: refused are those that break the container boundary on a stock kernel
// (mount/namespace tricks, module loading, ptrace of host-visible processes, raw I/O, open_by_handle
// "shocker", MAC policy changes, BPF/perf, reboot, kernel log). NET_ADMIN and NET_RAW only act
// inside the container's own network namespace, so they are allowed with a warning for NET_ADMIN.
import { posix } from 'node:path';

export const REFUSED_CAPS = new Set([
  'ALL', 'SYS_ADMIN', 'SYS_MODULE', 'SYS_PTRACE', 'SYS_RAWIO', 'SYS_BOOT', 'DAC_READ_SEARCH',
  'MAC_ADMIN', 'MAC_OVERRIDE', 'BPF', 'PERFMON', 'SYSLOG', 'SYS_TIME',
]);
export const WARNED_CAPS = new Set(['NET_ADMIN']);

export function normaliseCap(cap: string): string {
  return cap.trim().toUpperCase().replace(/^CAP_/, '');
}

/** security_opt entries that turn confinement off, or load a host file as a profile. */
export function refusedSecurityOpt(opt: string): string | null {
  const [rawKey, ...rest] = opt.split(/[=:]/);
  const key = rawKey.trim().toLowerCase();
  const value = rest.join(':').trim().toLowerCase();
  if ((key === 'apparmor' || key === 'seccomp' || key === 'systempaths') && value === 'unconfined') return `${key} unconfined disables the container's confinement`;
  if (key === 'label' && value === 'disable') return 'label=disable turns SELinux separation off';
  if (key === 'seccomp' || key === 'apparmor') return `custom ${key} profiles are not allowed (they could loosen confinement)`;
  if (key === 'label' || key === 'no-new-privileges') return null;
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
export function checkBindSource(source: string, policy: BindPolicy): { ok: true; source: string; relative: boolean } | { ok: false; reason: string } {
  if (source.startsWith('~')) return { ok: false, reason: `bind source "${source}" points into a home directory on the host` };
  if (source.includes('\0')) return { ok: false, reason: 'bind source contains a NUL byte' };
  if (posix.isAbsolute(source)) {
    const abs = posix.normalize(source);
    for (const sock of policy.dockerSocketPaths) {
      if (within(abs, sock) || within(sock, abs)) return { ok: false, reason: `bind mounts of the Docker socket (${sock}) or a directory holding it are refused` };
    }
    if (!policy.allowedBindRoots.some((root) => within(posix.normalize(root), abs))) {
      return { ok: false, reason: `bind mount of host path "${abs}" is outside the allowed roots${policy.allowedBindRoots.length ? ` (${policy.allowedBindRoots.join(', ')})` : ' (none are allowed)'}` };
    }
    return { ok: true, source: abs, relative: false };
  }
  const rel = posix.normalize(source);
  if (rel === '..' || rel.startsWith('../')) return { ok: false, reason: `bind source "${source}" escapes the app's working copy` };
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
