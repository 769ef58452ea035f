// The ssh that git runs (GIT_SSH_COMMAND), with or without a deploy key. Nothing of the service
// user's ssh setup takes part: no ssh_config (-F /dev/null), no agent, no ~/.ssh keys, no proxy
// or local command. ssh keeps the first value it reads for an option, so ours, coming first, win
// over anything that reached the argument list later.
import { GitError } from './errors.js';

// git hands GIT_SSH_COMMAND to a shell, and ssh expands "%" tokens and splits
// UserKnownHostsFile on spaces: paths going into it are limited to characters none of those
// layers treat specially, and anything else is refused rather than escaped.
const SAFE_PATH = /^\/[A-Za-z0-9._/-]+$/;

function safePath(p: string): string {
  if (!SAFE_PATH.test(p) || p.split('/').includes('..'))
    throw new GitError(
      `path ${JSON.stringify(p)} is not usable in GIT_SSH_COMMAND (only letters, digits, ".", "_", "-" and "/")`,
      'invalid',
    );
  return p;
}

/**
 * git runs `sh -c '<command> "$@"' <command> [options] <host> <remote command>`. git itself
 * passes no "--", so this prefix puts one before the host (the second to last argument): a host
 * that reads as an option can never become one, whatever git's own checks let through.
 */
const INSERT_DOUBLE_DASH =
  'n=$#; i=0; for a in "$@"; do i=$((i+1)); shift; if [ "$i" -eq "$((n-1))" ]; then set -- "$@" --; fi; set -- "$@" "$a"; done; exec';

function command(identity: string[], knownHostsFile: string, connectTimeoutSec: number): string {
  return [
    INSERT_DOUBLE_DASH,
    'ssh',
    '-F',
    '/dev/null',
    ...identity,
    '-o',
    'IdentitiesOnly=yes',
    '-o',
    'IdentityAgent=none',
    '-o',
    'ProxyCommand=none',
    '-o',
    'PermitLocalCommand=no',
    '-o',
    'BatchMode=yes',
    '-o',
    'PasswordAuthentication=no',
    '-o',
    'KbdInteractiveAuthentication=no',
    '-o',
    `UserKnownHostsFile=${safePath(knownHostsFile)}`,
    '-o',
    'GlobalKnownHostsFile=/dev/null',
    '-o',
    'StrictHostKeyChecking=accept-new',
    '-o',
    'CheckHostIP=no',
    '-o',
    'UpdateHostKeys=no',
    '-o',
    'HashKnownHosts=no',
    '-o',
    'ClearAllForwardings=yes',
    '-o',
    'ForwardAgent=no',
    '-o',
    'ForwardX11=no',
    '-o',
    `ConnectTimeout=${Math.max(1, Math.floor(connectTimeoutSec))}`,
  ].join(' ');
}

/** The GIT_SSH_COMMAND value for a key file and a known_hosts file (both must be safe paths). */
export function sshCommand(keyFile: string, knownHostsFile: string, connectTimeoutSec = 10): string {
  return command(['-i', safePath(keyFile)], knownHostsFile, connectTimeoutSec);
}

/** Without a deploy key: no identity at all (IdentityFile=none keeps ~/.ssh/id_* out too). */
export function anonymousSshCommand(knownHostsFile: string, connectTimeoutSec = 10): string {
  return command(['-o', 'IdentityFile=none'], knownHostsFile, connectTimeoutSec);
}
