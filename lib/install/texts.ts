// The text of every file `svc install` writes: pure functions of the inputs.
import { CADDY_API_UNIT, DATA_DIR, DEFAULT_ENV_FILE } from './paths.js';

/**
 * Paths land in ExecStart, which systemd splits on spaces and reads quotes and `$`/`%` in: only
 * plain path characters are accepted, so nothing there is read as anything but a path.
 */
export const SAFE_PATH = /^\/[A-Za-z0-9._/@+-]*$/;

/**
 * Node.js options of the serving process, wherever it is started (this unit, the Dockerfile, `npm
 * start`). V8 grows the young generation up to 16 MB while start-up allocates, and the pages stay
 * resident for good: a 1 MB one keeps an idle server about 8 MB smaller, for more frequent
 * scavenges under load (docs/performance.md). Start-up loads enough modules for V8 to optimise
 * the module loader's functions on a compiler thread, whose memory the C allocator keeps (about
 * 5 MB); compiled on the main thread instead, nothing measurable is lost under load. Kept in step
 * with the Dockerfile and package.json by tests/runtime/idle-footprint.e2e.test.ts.
 */
export const SERVE_NODE_OPTIONS: readonly string[] = [
  '--max-semi-space-size=1',
  '--no-concurrent-recompilation',
];

export interface UnitInput {
  /** The Node.js binary and the CLI script (`dist/runtime/cli.js`) the service runs. */
  node: string;
  cli: string;
  dataDir?: string;
  envFile?: string;
}

export function unitText(u: UnitInput): string {
  const dataDir = u.dataDir ?? DATA_DIR;
  const envFile = u.envFile ?? DEFAULT_ENV_FILE;
  for (const p of [u.node, u.cli, dataDir, envFile]) {
    if (!SAFE_PATH.test(p)) throw new Error(`refusing a path with unusual characters: ${JSON.stringify(p)}`);
  }
  for (const p of [u.node, u.cli]) {
    if (/^\/(root|home|run\/user)(\/|$)/.test(p))
      throw new Error(
        `${p} is under a home directory, which the unit's ProtectHome=yes hides from the service: install from a checkout elsewhere (e.g. /opt/svc)`,
      );
  }
  return [
    '# Installed by `svc install`; `svc uninstall` removes it. Settings belong in the environment file, not here.',
    '#',
    '# It runs as root, on purpose. The control plane drives the Docker engine through its socket, and',
    "# whoever can use that socket can start a privileged container with the host's / mounted: a user in",
    '# the `docker` group is root in all but name, and a separate user would only add ownership failures',
    '# (the environment file, the data directory, a restore) without taking any power away. What can be',
    '# taken away is everything besides the socket: the file system is read-only except the data',
    '# directory, no privilege can be gained, /tmp is private, home directories, kernel tunables,',
    '# modules, logs, the clock and control groups are out of reach, and the capability set is small.',
    '# MemoryDenyWriteExecute is left off: V8 compiles JavaScript to machine code at run time.',
    '[Unit]',
    'Description=svc control plane',
    'After=network-online.target docker.service ' + CADDY_API_UNIT,
    'Wants=network-online.target docker.service ' + CADDY_API_UNIT,
    '',
    '[Service]',
    'Type=simple',
    `EnvironmentFile=${envFile}`,
    `ExecStart=${u.node} ${SERVE_NODE_OPTIONS.join(' ')} ${u.cli} serve`,
    // Exit 75 is a restart the operator asked for (POST /api/instance/restart): on-failure restarts it.
    'Restart=on-failure',
    'RestartSec=2s',
    // Exit 2 is an invalid configuration: starting again cannot help, and would fill the journal.
    'RestartPreventExitStatus=2',
    'TimeoutStopSec=60s',
    'UMask=0077',
    'NoNewPrivileges=yes',
    'ProtectSystem=strict',
    `ReadWritePaths=${dataDir}`,
    'PrivateTmp=yes',
    'ProtectHome=yes',
    'PrivateDevices=yes',
    'ProtectKernelTunables=yes',
    'ProtectKernelModules=yes',
    'ProtectKernelLogs=yes',
    'ProtectControlGroups=yes',
    'ProtectClock=yes',
    'ProtectHostname=yes',
    'RestrictSUIDSGID=yes',
    'RestrictRealtime=yes',
    'RestrictNamespaces=yes',
    'LockPersonality=yes',
    'SystemCallArchitectures=native',
    // Netlink: Node lists the host's interfaces (the DNS check's own addresses) through it.
    'RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK',
    // Reading Caddy's access log (owned by caddy) and keeping the data directory's modes need the DAC ones.
    'CapabilityBoundingSet=CAP_CHOWN CAP_DAC_OVERRIDE CAP_DAC_READ_SEARCH CAP_FOWNER CAP_KILL CAP_NET_BIND_SERVICE',
    '',
    '[Install]',
    'WantedBy=multi-user.target',
    '',
  ].join('\n');
}

/**
 * `unix//run/<dir>/<name>` to the socket's path and the runtime directory systemd creates for it; null
 * for any other address (TCP, or a socket outside a directory of its own under /run).
 */
export function adminSocketRuntime(
  address: string | undefined,
): { socket: string; runtimeDir: string } | null {
  const m = /^unix\/(\/run\/([A-Za-z0-9_-][A-Za-z0-9._-]*)\/[A-Za-z0-9_-][A-Za-z0-9._-]*)$/.exec(
    address ?? '',
  );
  return m ? { socket: m[1]!, runtimeDir: m[2]! } : null;
}

/** The caddy-api drop-in that puts Caddy's admin endpoint on `address` (a unix socket adminSocketRuntime accepts). */
export function caddyAdminDropIn(address: string): string {
  const at = adminSocketRuntime(address);
  if (!at)
    throw new Error(`not a unix socket in a directory of its own under /run: ${JSON.stringify(address)}`);
  return [
    '# Installed by `svc install`; `svc uninstall` removes it.',
    '#',
    "# Caddy's admin endpoint on a unix socket in a directory only Caddy's user may enter (and root, as which",
    '# the control plane runs): on 127.0.0.1:2019 every local process, and anything that fetches a loopback',
    '# URL it is handed, could read the whole config (uploaded private keys included) or replace it.',
    '# Caddy 2.6 takes its admin address from a config only (CADDY_ADMIN came in 2.7), so a bootstrap config',
    '# comes on standard input; once Caddy has autosaved a config, --resume starts from that one instead, and',
    '# the control plane (SVC_CADDY_ADMIN names the same socket) keeps admin.listen there in every config it loads.',
    '[Service]',
    `RuntimeDirectory=${at.runtimeDir}`,
    'RuntimeDirectoryMode=0700',
    'StandardInput=data',
    `StandardInputText=${JSON.stringify({ admin: { listen: address } })}`,
    'ExecStart=',
    'ExecStart=/usr/bin/caddy run --environ --resume --config /dev/stdin',
    '',
  ].join('\n');
}

export function sysctlText(): string {
  return [
    '# Installed by `svc install`. Caddy opens a new listening socket on every config reload; with this,',
    '# connections queued on the closing one move to the new one instead of being reset (kernel 5.14+;',
    '# the leading "-" lets an older kernel skip it instead of failing the whole file).',
    '-net.ipv4.tcp_migrate_req = 1',
    '',
  ].join('\n');
}

export const SYSCTL_SETTINGS: ReadonlyArray<{ key: string; value: string }> = [
  { key: 'net.ipv4.tcp_migrate_req', value: '1' },
];

export interface EnvValue {
  key: string;
  value: string;
  /** Never printed: the plan shows "(generated)" instead. */
  secret?: boolean;
}

const ENV_HEADER = [
  '# svc settings: read by systemd for svc.service (EnvironmentFile) and by every `svc` command.',
  '# Written by `svc install`, which adds missing values and never changes one that is here.',
  '# Mode 0600, root: it holds the master key. Back SVC_MASTER_KEY up elsewhere: sealed secrets',
  '# and backups cannot be opened without it.',
];

/** Keys set in an environment file (the last occurrence wins, as systemd and parseEnvFile read it). */
export function envKeys(text: string): Set<string> {
  const keys = new Set<string>();
  for (const raw of text.split(/\r?\n/)) {
    const m = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=/.exec(raw);
    if (m) keys.add(m[1]!);
  }
  return keys;
}

/**
 * The environment file with `wanted` added where missing: an existing file keeps every byte it had
 * (values, comments, order) and only gains lines at its end. Returns the keys it added.
 */
export function mergeEnvFile(
  existing: string | null,
  wanted: readonly EnvValue[],
): { text: string; added: EnvValue[] } {
  const have = existing === null ? new Set<string>() : envKeys(existing);
  const added = wanted.filter((v) => !have.has(v.key));
  for (const v of added) {
    if (/[\r\n]/.test(v.value)) throw new Error(`${v.key}: a value cannot span lines`);
  }
  const lines = added.map((v) => `${v.key}=${v.value}`);
  if (existing === null) return { text: [...ENV_HEADER, ...lines, ''].join('\n'), added };
  if (added.length === 0) return { text: existing, added };
  const base = existing === '' || existing.endsWith('\n') ? existing : existing + '\n';
  return { text: base + ['# Added by `svc install`.', ...lines, ''].join('\n'), added };
}
