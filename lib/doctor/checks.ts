// `svc doctor`: every check `svc install` relies on, then the running service's health. Each check
// is a function of a context of probes (files, sockets, DNS, TLS), so tests hand it fakes for what
// cannot run here and the real thing (the engine socket) where it exists.
import { describeProblems, type CodeProblem } from '../install/code-owner.js';
import type { X509Certificate } from 'node:crypto';
import type { Config } from '../config.js';
import { CONTROL_ROUTE_ID } from '../proxy/config.js';
import { unixAdminPath } from '../proxy/caddy.js';
import {
  CADDY_ADMIN_DROPIN,
  CADDY_ADMIN_SOCKET,
  CADDY_API_UNIT,
  CADDY_UNIT,
  DATA_DIR,
  SYSCTL_FILE,
  UNIT_FILE,
  UNIT_NAME,
  wantsLink,
} from '../install/paths.js';
import { missingPackages, supportedOs, type HostState, type PathState } from '../install/plan.js';
import { adminSocketRuntime, SYSCTL_SETTINGS } from '../install/texts.js';
import type { DnsCheck } from '../domains/dns.js';

export type Status = 'ok' | 'warning' | 'error';

export interface CheckResult {
  status: Status;
  detail: string;
  fix?: string;
}

export interface Listener {
  port: number;
  address: string;
  /** The process name, when the listing could tell (root only). */
  process: string | null;
}

export interface TlsPeer {
  cert: X509Certificate | null;
  authorized: boolean;
  error?: string;
}

export interface DoctorContext {
  /** The service's configuration as `svc serve` reads it. */
  config: Config;
  /** The environment file read (null: none was found). */
  envFile: string | null;
  envFileState: PathState | null;
  host: HostState;
  now: number;
  pingEngine(socketPath: string): Promise<{ version: string }>;
  caddyConfig(adminUrl: string): Promise<unknown>;
  health(url: string): Promise<{ status: number; body: string }>;
  listeners(): Promise<Listener[] | null>;
  dns(host: string): Promise<DnsCheck>;
  tls(address: string, port: number, servername: string): Promise<TlsPeer>;
  diskSpace(path: string): Promise<{ free: number; total: number }>;
  stat(path: string): Promise<PathState | null>;
  /** The checkout the root service runs and what under or above it others could change (lib/install/code-owner.ts). */
  code(): Promise<{ checkout: string; problems: CodeProblem[] }>;
}

export interface Check {
  name: string;
  run(ctx: DoctorContext): Promise<CheckResult>;
}

const ok = (detail: string): CheckResult => ({ status: 'ok', detail });
const warning = (detail: string, fix?: string): CheckResult => ({ status: 'warning', detail, fix });
const error = (detail: string, fix?: string): CheckResult => ({ status: 'error', detail, fix });
const reason = (e: unknown) => (e instanceof Error ? e.message : String(e));
const mode = (m: number) => (m & 0o777).toString(8).padStart(4, '0');
const GiB = 1024 ** 3;
/** Certificates are renewed 30 days ahead; 14 days left means renewal has been failing for two weeks. */
export const CERT_WARNING_DAYS = 14;

export const checks: Check[] = [
  {
    name: 'system',
    async run({ host }) {
      const os = supportedOs(host.os);
      return os.ok ? ok(os.name) : warning(os.reason);
    },
  },
  {
    name: 'packages',
    async run({ host }) {
      const missing = missingPackages(host);
      return missing.length
        ? error(
            `not installed: ${missing.join(', ')}`,
            `apt-get install --no-install-recommends ${missing.join(' ')}`,
          )
        : ok('docker.io and caddy are installed');
    },
  },
  {
    name: 'code',
    async run({ code }) {
      const { checkout, problems } = await code();
      if (problems.length === 0) return ok(`${checkout}: owned by root, writable by root only`);
      return error(
        `root runs code others can change: ${describeProblems(problems)}`,
        `chown -R root:root ${checkout} and chmod -R go-w it (and the folders above), or install from a copy only root can write`,
      );
    },
  },
  {
    name: 'unit',
    async run({ host }) {
      if (!host.paths[UNIT_FILE]) return error(`no ${UNIT_FILE}`, 'svc install');
      if (!host.paths[wantsLink(UNIT_NAME)])
        return warning(
          `${UNIT_NAME} is not enabled: it will not start at boot`,
          `systemctl enable --now ${UNIT_NAME}`,
        );
      if (host.systemd && !host.active[UNIT_NAME])
        return error(
          `${UNIT_NAME} is not running`,
          `systemctl start ${UNIT_NAME}; journalctl -u ${UNIT_NAME}`,
        );
      return ok(`${UNIT_NAME} enabled${host.systemd ? ' and running' : ''}`);
    },
  },
  {
    name: 'caddy-api',
    async run({ host }) {
      if (host.paths[wantsLink(CADDY_UNIT)] || host.active[CADDY_UNIT]) {
        return error(
          `${CADDY_UNIT} (the Caddyfile service) is enabled or running: it holds the ports and admin endpoint caddy-api needs`,
          `systemctl disable --now ${CADDY_UNIT}; systemctl enable --now ${CADDY_API_UNIT}`,
        );
      }
      if (!host.paths[wantsLink(CADDY_API_UNIT)])
        return error(`${CADDY_API_UNIT} is not enabled`, `systemctl enable --now ${CADDY_API_UNIT}`);
      if (host.systemd && !host.active[CADDY_API_UNIT])
        return error(
          `${CADDY_API_UNIT} is not running`,
          `systemctl start ${CADDY_API_UNIT}; journalctl -u ${CADDY_API_UNIT}`,
        );
      return ok(`${CADDY_API_UNIT} enabled${host.systemd ? ' and running' : ''}`);
    },
  },
  {
    name: 'environment file',
    async run({ envFile, envFileState }) {
      if (!envFile || !envFileState)
        return error('no environment file: the service runs on defaults', 'svc install');
      if ((envFileState.mode & 0o077) !== 0)
        return error(
          `${envFile} is ${mode(envFileState.mode)}: others can read the master key`,
          `chmod 600 ${envFile}`,
        );
      if (envFileState.uid !== 0)
        return warning(
          `${envFile} belongs to uid ${envFileState.uid}, not root`,
          `chown root:root ${envFile}`,
        );
      return ok(`${envFile} (0600, root)`);
    },
  },
  {
    name: 'master key',
    async run({ config, stat }) {
      if (config.masterKey) return ok('SVC_MASTER_KEY is set');
      const file = `${config.dataDir}/master.key`;
      const st = await stat(file);
      if (st) {
        if ((st.mode & 0o077) !== 0) return error(`${file} is ${mode(st.mode)}`, `chmod 600 ${file}`);
        return warning(
          `the key is in ${file}, beside the data it protects`,
          'move it to SVC_MASTER_KEY in the environment file (docs/security.md)',
        );
      }
      return error('no SVC_MASTER_KEY and no key file', 'svc install (it generates SVC_MASTER_KEY)');
    },
  },
  {
    name: 'data directory',
    async run({ config, stat }) {
      const st = await stat(config.dataDir);
      if (!st)
        return error(
          `${config.dataDir} does not exist`,
          config.dataDir === DATA_DIR ? 'svc install' : 'check SVC_DATA_DIR',
        );
      if (st.type !== 'dir') return error(`${config.dataDir} is not a directory`);
      if ((st.mode & 0o077) !== 0)
        return error(`${config.dataDir} is ${mode(st.mode)}`, `chmod 700 ${config.dataDir}`);
      return ok(`${config.dataDir} (0700)`);
    },
  },
  {
    name: 'disk',
    async run({ config, diskSpace }) {
      const d = await diskSpace(config.dataDir).catch(() => null);
      if (!d) return error(`cannot read the free space of ${config.dataDir}`);
      const share = d.total ? d.free / d.total : 0;
      const detail = `${(d.free / GiB).toFixed(1)} GiB free of ${(d.total / GiB).toFixed(1)} GiB (${Math.round(share * 100)}%) for ${config.dataDir}`;
      const fix = "POST /api/instance/prune (or the dashboard's Instance page), or a bigger disk";
      if (d.free < GiB || share < 0.05) return error(detail, fix);
      if (d.free < 5 * GiB || share < 0.1) return warning(detail, fix);
      return ok(detail);
    },
  },
  {
    name: 'kernel',
    async run({ host }) {
      if (!host.paths[SYSCTL_FILE]) return warning(`no ${SYSCTL_FILE}`, 'svc install');
      for (const s of SYSCTL_SETTINGS) {
        const v = host.sysctl[s.key];
        if (v === null)
          return warning(
            `this kernel has no ${s.key} (5.14 or later): Caddy reloads may reset queued connections`,
          );
        if (v !== undefined && v !== s.value)
          return warning(`${s.key} is ${v}`, `sysctl -w ${s.key}=${s.value}`);
      }
      return ok(SYSCTL_SETTINGS.map((s) => `${s.key}=${s.value}`).join(', '));
    },
  },
  {
    name: 'engine',
    async run({ config, pingEngine }) {
      try {
        const v = await pingEngine(config.dockerSocket);
        return ok(`Docker ${v.version} at ${config.dockerSocket}`);
      } catch (e) {
        return error(
          `the Docker engine does not answer at ${config.dockerSocket}: ${reason(e)}`,
          'systemctl enable --now docker.service',
        );
      }
    },
  },
  {
    name: 'ports',
    async run({ config, listeners }) {
      const list = await listeners();
      if (!list) return warning('cannot list the listening sockets (ss missing?)');
      const problems: string[] = [];
      const found: string[] = [];
      for (const port of [config.proxy.httpPort, config.proxy.httpsPort]) {
        const on = list.filter((l) => l.port === port);
        if (on.length === 0) problems.push(`nothing listens on ${port}`);
        else if (on.some((l) => l.process !== null && l.process !== 'caddy'))
          problems.push(`${port} is held by ${on.map((l) => l.process).join(', ')}, not Caddy`);
        else found.push(String(port));
      }
      if (problems.length)
        return error(problems.join('; '), `stop what holds the ports; systemctl restart ${CADDY_API_UNIT}`);
      return ok(`Caddy listens on ${found.join(' and ')}`);
    },
  },
  {
    name: 'proxy',
    async run({ config, caddyConfig }) {
      if (!config.proxy.enabled) return warning('SVC_PROXY=off: the control plane never configures Caddy');
      let cfg: unknown;
      try {
        cfg = await caddyConfig(config.proxy.adminUrl);
      } catch (e) {
        const r = reason(e);
        return error(
          /admin API/.test(r) ? r : `Caddy's admin API does not answer at ${config.proxy.adminUrl}: ${r}`,
          `systemctl restart ${CADDY_API_UNIT}`,
        );
      }
      const text = JSON.stringify(cfg ?? null);
      if (!text.includes('"@id":"svc-'))
        return error(
          "Caddy answers but holds none of the control plane's routes: not in sync",
          `systemctl restart ${UNIT_NAME} (it loads the config at boot and every 15 s)`,
        );
      if (config.controlDomain && !text.includes(`"@id":"${CONTROL_ROUTE_ID}"`))
        return error(
          `Caddy has no route for the control domain ${config.controlDomain}`,
          `systemctl restart ${UNIT_NAME}`,
        );
      return ok(`Caddy at ${config.proxy.adminUrl} holds the control plane's routes`);
    },
  },
  {
    name: 'caddy admin',
    async run(ctx) {
      return caddyAdminCheck(ctx);
    },
  },
  {
    name: 'service',
    async run({ config, health }) {
      const host =
        config.host === '0.0.0.0'
          ? '127.0.0.1'
          : config.host === '::'
            ? '[::1]'
            : config.host.includes(':')
              ? `[${config.host}]`
              : config.host;
      const url = `${config.tlsCert ? 'https' : 'http'}://${host}:${config.port}/api/health`;
      try {
        const r = await health(url);
        if (r.status === 200) return ok(`${url} answers ${r.body.trim().slice(0, 80)}`);
        return error(
          `${url} answers ${r.status}: ${r.body.trim().slice(0, 120)}`,
          `journalctl -u ${UNIT_NAME}`,
        );
      } catch (e) {
        return error(
          `${url} does not answer: ${reason(e)}`,
          `systemctl status ${UNIT_NAME}; journalctl -u ${UNIT_NAME}`,
        );
      }
    },
  },
  {
    name: 'dns',
    async run({ config, dns }) {
      if (!config.controlDomain)
        return warning(
          'no control domain (SVC_BASE_DOMAIN or SVC_CONTROL_DOMAIN): operators reach the API over plain HTTP',
          'svc install --base-domain example.com (or set it in the environment file)',
        );
      const d = await dns(config.controlDomain).catch((e: unknown) => ({
        error: reason(e),
        points_here: false,
        resolved: [] as string[],
        expected: [] as string[],
      }));
      if (d.points_here) return ok(`${config.controlDomain} -> ${d.resolved.join(', ')}`);
      const detail = d.error
        ? `${config.controlDomain}: ${d.error}`
        : `${config.controlDomain} -> ${d.resolved.join(', ')}, not this host (${d.expected.join(', ') || 'no address found'})`;
      return error(
        detail,
        `an A/AAAA record for ${config.controlDomain} to ${d.expected.join(' or ') || "this host's public address"} (or set SVC_PUBLIC_IP)`,
      );
    },
  },
  {
    name: 'certificate',
    async run({ config, tls, now }) {
      if (!config.controlDomain) return warning('no control domain: no certificate to check');
      const name = config.controlDomain;
      const p = await tls('127.0.0.1', config.proxy.httpsPort, name).catch((e: unknown): TlsPeer => ({
        cert: null,
        authorized: false,
        error: reason(e),
      }));
      if (!p.cert)
        return error(
          `no certificate served for ${name}: ${p.error ?? 'none'}`,
          'check the dns row first; Caddy obtains it once DNS points here (journalctl -u caddy-api)',
        );
      if (p.cert.checkHost(name) === undefined)
        return error(
          `the certificate served does not cover ${name} (${p.cert.subject.replace(/\n/g, ', ')})`,
        );
      const left = (Date.parse(p.cert.validTo) - now) / 86_400_000;
      if (left <= 0)
        return error(
          `the certificate for ${name} expired on ${new Date(p.cert.validTo).toISOString()}`,
          'journalctl -u caddy-api (renewal failures)',
        );
      if (!p.authorized)
        return error(
          `the certificate for ${name} is not trusted: ${p.error ?? 'unknown issuer'}`,
          'SVC_ACME_CA (and SVC_ACME_CA_ROOT for a private CA)',
        );
      const detail = `${name}: valid until ${new Date(p.cert.validTo).toISOString().slice(0, 10)} (${Math.floor(left)} days)`;
      if (left < CERT_WARNING_DAYS)
        return warning(detail, 'journalctl -u caddy-api (renewal is 30 days ahead; it has been failing)');
      return ok(detail);
    },
  },
];

/** Caddy's default admin port: what a Caddy started without an admin address listens on. */
const CADDY_DEFAULT_ADMIN_PORT = 2019;

/**
 * Caddy's admin endpoint owns the proxy (its config holds uploaded private keys): on TCP every local
 * process can reach it, so it belongs on a unix socket only Caddy's user and root can open.
 */
async function caddyAdminCheck({
  config,
  envFile,
  host,
  listeners,
  stat,
}: DoctorContext): Promise<CheckResult> {
  if (!config.proxy.enabled) return ok('SVC_PROXY=off: Caddy is not driven by the control plane');
  const admin = config.proxy.adminUrl;
  const socket = unixAdminPath(admin);
  if (!socket) {
    const file = envFile ?? 'the environment file';
    return warning(
      `SVC_CADDY_ADMIN is ${admin}: Caddy's admin endpoint is on TCP, where every local process can read and replace its config`,
      `set SVC_CADDY_ADMIN=${CADDY_ADMIN_SOCKET} in ${file}; svc install (it adds the caddy-api drop-in); move the running endpoint: ` +
        `curl -X PATCH -H 'content-type: application/json' -d '"${CADDY_ADMIN_SOCKET}"' ${admin}/config/admin/listen; ` +
        `systemctl restart ${UNIT_NAME}`,
    );
  }
  const problems: string[] = [];
  const fixes: string[] = [];
  if (adminSocketRuntime(admin) && !host.paths[CADDY_ADMIN_DROPIN]) {
    problems.push(
      `no ${CADDY_ADMIN_DROPIN}: a Caddy started without its autosaved config puts its admin endpoint on 127.0.0.1:2019`,
    );
    fixes.push('svc install');
  }
  // Besides the proxy's ports, a Caddy listening on TCP is listening with its admin endpoint (the control
  // plane owns every HTTP server); a resumed config from before the socket keeps it there.
  const tcp = ((await listeners()) ?? []).filter(
    (l) =>
      (l.process === 'caddy' && l.port !== config.proxy.httpPort && l.port !== config.proxy.httpsPort) ||
      (l.process === null && l.port === CADDY_DEFAULT_ADMIN_PORT),
  );
  if (tcp.length) {
    problems.push(
      `${tcp.map((l) => `${l.address}:${l.port}`).join(', ')} ${tcp.length > 1 ? 'listen' : 'listens'} on TCP (Caddy's admin endpoint, not on ${socket})`,
    );
    const at = tcp[0]!;
    const hostPart =
      at.address === '*' || at.address === '0.0.0.0'
        ? '127.0.0.1'
        : at.address === '[::]'
          ? '[::1]'
          : at.address;
    fixes.push(
      `curl -X PATCH -H 'content-type: application/json' -d '"${admin}"' http://${hostPart}:${at.port}/config/admin/listen`,
    );
  }
  const dir = socket.slice(0, socket.lastIndexOf('/')) || '/';
  const [d, s] = await Promise.all([stat(dir), stat(socket)]);
  if (!d || !s) {
    if (problems.length) return warning(`${problems.join('; ')}; no socket at ${socket}`, fixes.join('; '));
    return error(
      `no socket at ${socket}`,
      `systemctl restart ${CADDY_API_UNIT}; journalctl -u ${CADDY_API_UNIT}`,
    );
  }
  // Opening a unix socket takes search permission on its directory and write permission on the socket.
  const open = [
    d.mode & 0o010 && s.mode & 0o020 ? 'its group' : '',
    d.mode & 0o001 && s.mode & 0o002 ? 'every user' : '',
  ].filter(Boolean);
  if (open.length) {
    problems.push(
      `${dir} is ${mode(d.mode)} and ${socket} ${mode(s.mode)}: ${open.join(' and ')} can open it`,
    );
    fixes.push(
      `chmod 700 ${dir}${adminSocketRuntime(admin) ? ` (RuntimeDirectoryMode=0700 in ${CADDY_ADMIN_DROPIN} keeps it so: svc install)` : ''}`,
    );
  }
  if (problems.length) return warning(problems.join('; '), fixes.join('; '));
  return ok(`on ${socket} (${dir} ${mode(d.mode)}, socket ${mode(s.mode)}), no admin endpoint on TCP`);
}

export interface CheckLine extends CheckResult {
  name: string;
}

/** Runs every check; a check that throws is an error line of its own, never a crash of the doctor. */
export async function runChecks(ctx: DoctorContext, list: readonly Check[] = checks): Promise<CheckLine[]> {
  const out: CheckLine[] = [];
  for (const c of list) {
    const r = await c.run(ctx).catch((e: unknown): CheckResult => error(`the check failed: ${reason(e)}`));
    out.push({ name: c.name, ...r });
  }
  return out;
}

export function formatLine(l: CheckLine): string {
  return `${l.status.padEnd(7)}  ${l.name.padEnd(16)}  ${l.detail}${l.fix ? ` [fix: ${l.fix}]` : ''}`;
}

/** `ss -Hltnp` lines: `LISTEN 0 4096 *:443 *:* users:(("caddy",pid=812,fd=9))`. */
export function parseListeners(text: string): Listener[] {
  const out: Listener[] = [];
  for (const line of text.split('\n')) {
    const cols = line.trim().split(/\s+/);
    if (cols.length < 4) continue;
    const local = cols[3]!;
    const i = local.lastIndexOf(':');
    const port = Number(local.slice(i + 1));
    if (!Number.isInteger(port)) continue;
    const proc = /users:\(\("([^"]+)"/.exec(line)?.[1] ?? null;
    out.push({ port, address: local.slice(0, i), process: proc });
  }
  return out;
}
