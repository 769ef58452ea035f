// The posture checklist: a pure evaluation of facts gathered elsewhere (lib/security/live.ts reads
// them for the API, runtime/security-cli.ts for the CLI; the opt-out file is lib/security/opt-out.ts).
import { isIP } from 'node:net';
import { isStale, type ParsedSnapshot } from './snapshot.js';
import type { MetadataState } from '../net/metadata-guard.js';

export type PostureStatus = (typeof POSTURE_STATUSES)[number];
export const POSTURE_CODES = [
  'firewall',
  'fail2ban',
  'master_key',
  'metrics_token',
  'exposure_mode',
  'base_domain',
  'request_monitoring',
  'host_ports',
  'notify_allow',
  'container_shell',
  'link_local',
  'cluster_managers',
  'cluster_nodes',
] as const;
export type PostureCode = (typeof POSTURE_CODES)[number];
export const POSTURE_STATUSES = ['ok', 'warning', 'error', 'info'] as const;

export interface PostureItem {
  code: PostureCode;
  status: PostureStatus;
  title: string;
  reason: string;
  fix: string;
  app?: string;
  service?: string;
}

export type PublishedPort =
  | number
  | string
  | { host_ip?: string; host_port: number | string; container_port?: number | string; protocol?: string };

export interface PostureInput {
  masterKeySet: boolean;
  /** Where the key came from: SVC_MASTER_KEY, or the key file beside the data. */
  masterKeySource?: 'env' | 'file';
  /** `<dataDir>/master.key`, and whether it exists (a copy left there after moving the key out). */
  masterKeyFile?: string;
  masterKeyFilePresent?: boolean;
  metricsTokenSet: boolean;
  exposure: 'local' | 'public';
  baseDomain?: string | null;
  /**
   * What the running service knows of the proxy: whether Caddy runs our config, and whether it
   * serves a valid certificate for the control domain. Absent where nobody can tell (the CLI).
   */
  edge?: {
    enabled: boolean;
    synced: boolean;
    error?: string;
    controlDomain: string | null;
    /** Expiry of the valid certificate Caddy serves for the control domain; null: none seen. */
    controlCertNotAfter: string | null;
  };
  /** SVC_SECURITY_AGENT=true. */
  agentEnabled: boolean;
  /** SVC_SECURITY_EXPECT_FIREWALL=false, or the opt-out recorded by `svc security-check`. */
  optedOut: boolean;
  /** The agent's parsed snapshot (null when none was read). */
  snapshot: ParsedSnapshot | null;
  /** The access-log tailer's status (null when there is no tailer). */
  tailer: {
    reading: boolean;
    path: string;
    error?: string;
    lines: number;
    lastLineAt: string | null;
    probed?: boolean;
  } | null;
  /** SVC_SECURITY_MONITOR is not false. */
  monitorEnabled: boolean;
  /** Services that publish host ports; ports bound only to loopback are not counted. */
  hostPorts: ReadonlyArray<{ app: string; service: string; ports: readonly PublishedPort[] }>;
  /** SVC_NOTIFY_ALLOW: addresses notification URLs may reach although they are private. */
  notifyAllow?: readonly string[];
  /** SVC_ENABLE_SHELL=true. */
  shellEnabled?: boolean;
  /** Whether app containers and builds can reach link-local addresses (lib/net/metadata-guard.ts). */
  linkLocal?: MetadataState & { fix: string };
  /** Cluster mode: the swarm's managers and the hostnames of nodes that are down (absent: single host). */
  cluster?: { managers: number; managersReady: number; down: readonly string[] } | null;
  now?: number;
}

export const OPT_OUT_REASON = 'disabled by operator';
const OPT_OUT_FIX =
  'Nothing to do. To have it checked again, run `svc security-check --undo` and leave SVC_SECURITY_EXPECT_FIREWALL unset.';
const AGENT_FIX =
  'Turn on the read-only host agent as root with `svc security-agent on`, or, if the host is protected ' +
  'elsewhere, run `svc security-check` to opt out of this check.';

function minutesAgo(ms: number, now: number): string {
  const m = Math.max(0, Math.round((now - ms) / 60000));
  return m === 1 ? '1 minute' : `${m} minutes`;
}

/** The firewall/fail2ban rows share everything up to the point where the snapshot is usable. */
function agentRow(
  code: 'firewall' | 'fail2ban',
  title: string,
  input: PostureInput,
): PostureItem | { snap: Extract<ParsedSnapshot, { ok: true }>; stale: boolean } {
  if (input.optedOut) return { code, status: 'info', title, reason: OPT_OUT_REASON, fix: OPT_OUT_FIX };
  if (!input.agentEnabled) {
    return {
      code,
      status: 'warning',
      title,
      reason: `${title} state is unknown: the host security agent is off.`,
      fix: AGENT_FIX,
    };
  }
  const snap = input.snapshot;
  if (snap === null || !snap.ok) {
    return {
      code,
      status: 'warning',
      title,
      reason: `${title} state is unknown: ${snap?.reason ?? 'no snapshot from the host security agent yet'}.`,
      fix: 'Check the agent with `svc security-agent status`; it runs as root every minute. Re-run `svc security-agent on` if its timer is missing.',
    };
  }
  return { snap, stale: isStale(snap.generatedAtMs, input.now ?? Date.now()) };
}

function firewallRow(input: PostureInput): PostureItem {
  const title = 'Firewall';
  const r = agentRow('firewall', title, input);
  if ('code' in r) return r;
  const now = input.now ?? Date.now();
  if (!r.snap.firewall.ok) {
    return {
      code: 'firewall',
      status: 'warning',
      title,
      reason: `Firewall state is unknown: ${r.snap.firewall.reason}.`,
      fix: 'Check the agent with `svc security-agent status`.',
    };
  }
  const f = r.snap.firewall.value;
  const last = f.installed && f.backend ? `${f.backend} ${f.active ? 'active' : 'inactive'}` : 'no firewall';
  if (r.stale) {
    return {
      code: 'firewall',
      status: 'warning',
      title,
      reason: `Firewall state is stale: the agent's last snapshot is ${minutesAgo(r.snap.generatedAtMs, now)} old (it showed ${last}).`,
      fix: 'The agent should run every minute: check `svc security-agent status` and the timer or cron entry it installed.',
    };
  }
  if (!f.installed || f.backend === null) {
    return {
      code: 'firewall',
      status: 'error',
      title,
      reason: 'No firewall detected (ufw, nftables or iptables): every listening port is reachable.',
      fix: 'Install and enable one, for example: `apt install ufw && ufw default deny incoming && ufw allow 22/tcp && ufw allow 80/tcp && ufw allow 443/tcp && ufw enable`.',
    };
  }
  if (!f.active) {
    return {
      code: 'firewall',
      status: 'error',
      title,
      reason: `${f.backend} is installed but inactive: it filters no incoming traffic.`,
      fix:
        f.backend === 'ufw'
          ? 'Allow SSH, HTTP and HTTPS, then enable it: `ufw allow 22/tcp && ufw allow 80/tcp && ufw allow 443/tcp && ufw enable`.'
          : `Load a ruleset that drops unsolicited incoming traffic (keep SSH, 80 and 443 open) and make it persistent.`,
    };
  }
  const n = f.rules.length;
  return {
    code: 'firewall',
    status: 'ok',
    title,
    reason: `${f.backend} is active with ${n} rule${n === 1 ? '' : 's'}.`,
    fix: 'Nothing to do.',
  };
}

function fail2banRow(input: PostureInput): PostureItem {
  const title = 'fail2ban';
  const r = agentRow('fail2ban', title, input);
  if ('code' in r) return r;
  const now = input.now ?? Date.now();
  if (!r.snap.fail2ban.ok) {
    return {
      code: 'fail2ban',
      status: 'warning',
      title,
      reason: `fail2ban state is unknown: ${r.snap.fail2ban.reason}.`,
      fix: 'Check the agent with `svc security-agent status`.',
    };
  }
  const f = r.snap.fail2ban.value;
  if (r.stale) {
    return {
      code: 'fail2ban',
      status: 'warning',
      title,
      reason: `fail2ban state is stale: the agent's last snapshot is ${minutesAgo(r.snap.generatedAtMs, now)} old.`,
      fix: 'The agent should run every minute: check `svc security-agent status` and the timer or cron entry it installed.',
    };
  }
  if (!f.installed) {
    return {
      code: 'fail2ban',
      status: 'warning',
      title,
      reason: 'fail2ban is not installed: repeated failed logins (SSH and others) are never banned.',
      fix: 'Install it with `apt install fail2ban` (the sshd jail is on by default on Debian) and start it.',
    };
  }
  if (!f.active) {
    return {
      code: 'fail2ban',
      status: 'warning',
      title,
      reason: 'fail2ban is installed but not running.',
      fix: 'Start it and enable it at boot: `systemctl enable --now fail2ban`.',
    };
  }
  if (f.jails.length === 0) {
    return {
      code: 'fail2ban',
      status: 'warning',
      title,
      reason: 'fail2ban is running but no jail is enabled, so it bans nothing.',
      fix: 'Enable at least the sshd jail in /etc/fail2ban/jail.local (`[sshd]` with `enabled = true`) and reload fail2ban.',
    };
  }
  const banned = f.jails.reduce((s, j) => s + j.currently_banned, 0);
  return {
    code: 'fail2ban',
    status: 'ok',
    title,
    reason: `fail2ban is active with ${f.jails.length} jail${f.jails.length === 1 ? '' : 's'} (${banned} address${banned === 1 ? '' : 'es'} banned now).`,
    fix: 'Nothing to do.',
  };
}

function isLoopback(hostIp: string | undefined): boolean {
  if (!hostIp) return false;
  const ip = hostIp.replace(/^\[|\]$/g, '');
  if (isIP(ip) === 4) return ip.startsWith('127.');
  return ip === '::1';
}

function portText(p: PublishedPort): string | null {
  if (typeof p === 'number' || typeof p === 'string') return String(p);
  if (isLoopback(p.host_ip)) return null;
  const host = p.host_ip && p.host_ip !== '0.0.0.0' && p.host_ip !== '::' ? `${p.host_ip}:` : '';
  const target = p.container_port !== undefined ? `->${p.container_port}` : '';
  const proto = p.protocol && p.protocol !== 'tcp' ? `/${p.protocol}` : '';
  return `${host}${p.host_port}${target}${proto}`;
}

function hostPortRows(input: PostureInput): PostureItem[] {
  const rows: PostureItem[] = [];
  for (const s of input.hostPorts) {
    const ports = s.ports.map(portText).filter((x): x is string => x !== null);
    if (ports.length === 0) continue;
    rows.push({
      code: 'host_ports',
      status: 'warning',
      title: 'Host ports',
      reason: `Service "${s.service}" of app "${s.app}" publishes host port${ports.length === 1 ? '' : 's'} ${ports.join(', ')}, bypassing the reverse proxy (no HTTPS, no access log, no traffic monitoring).`,
      fix: `Remove the \`ports:\` mapping of "${s.service}" and reach it through a domain on the reverse proxy, or bind it to 127.0.0.1 if only the host needs it.`,
      app: s.app,
      service: s.service,
    });
  }
  if (rows.length === 0) {
    rows.push({
      code: 'host_ports',
      status: 'ok',
      title: 'Host ports',
      reason: 'No service publishes a host port: all traffic goes through the reverse proxy.',
      fix: 'Nothing to do.',
    });
  }
  return rows;
}

/** The posture checklist, in the contract's order. Pure: the caller gathers live state. */
export function evaluatePosture(input: PostureInput): { items: PostureItem[] } {
  const items: PostureItem[] = [firewallRow(input), fail2banRow(input)];

  items.push(masterKeyRow(input));
  items.push(
    input.metricsTokenSet
      ? {
          code: 'metrics_token',
          status: 'ok',
          title: 'Metrics token',
          reason: 'SVC_METRICS_TOKEN is set: /metrics answers only to that bearer token.',
          fix: 'Nothing to do.',
        }
      : {
          code: 'metrics_token',
          status: 'warning',
          title: 'Metrics token',
          reason:
            'SVC_METRICS_TOKEN is unset: /metrics has no token of its own, so monitoring cannot scrape it safely, and it must not be exposed without one.',
          fix: 'Set SVC_METRICS_TOKEN to a long random value (`openssl rand -hex 32`) and give it to your scraper as a bearer token.',
        },
  );
  items.push(
    input.exposure === 'public'
      ? {
          code: 'exposure_mode',
          status: 'ok',
          title: 'Exposure mode',
          reason: 'Running in public mode behind the HTTPS reverse proxy.',
          fix: 'Nothing to do.',
        }
      : {
          code: 'exposure_mode',
          status: 'warning',
          title: 'Exposure mode',
          reason: 'Running in local exposure mode: the dashboard and apps are not served over public HTTPS.',
          fix: 'Point a domain at this host, set SVC_BASE_DOMAIN and SVC_EXPOSURE=public, and restart.',
        },
  );
  items.push(baseDomainRow(input));
  items.push(requestMonitoringRow(input));
  items.push(...hostPortRows(input));
  // Shown only when turned on: each widens what the control plane can reach or do.
  if (input.notifyAllow?.length) {
    items.push({
      code: 'notify_allow',
      status: 'info',
      title: 'Notification address exemptions',
      reason: `SVC_NOTIFY_ALLOW lets notification URLs reach ${input.notifyAllow.join(', ')}, which the outbound guard would otherwise refuse as private or reserved.`,
      fix: 'Nothing to do if these are your self-hosted chat servers; keep the list as narrow as possible.',
    });
  }
  if (input.shellEnabled) {
    items.push({
      code: 'container_shell',
      status: 'warning',
      title: 'Container shell',
      reason:
        'SVC_ENABLE_SHELL=true: operators (after a step-up) can open a shell inside app containers from the API.',
      fix: 'Unset SVC_ENABLE_SHELL when nobody needs it.',
    });
  }
  if (input.linkLocal) {
    const l = input.linkLocal;
    items.push({
      code: 'link_local',
      status: l.mode === 'blocked' ? 'ok' : 'warning',
      title: 'Cloud metadata',
      reason:
        l.mode === 'blocked'
          ? `App containers and builds cannot reach link-local addresses (169.254.0.0/16, fe80::/10): ${l.detail}.`
          : l.mode === 'allowed'
            ? `App containers and builds can reach link-local addresses, the cloud metadata service among them (${l.detail}).`
            : `App containers and builds may reach link-local addresses, the cloud metadata service among them: ${l.detail}.`,
      fix: l.fix,
    });
  }
  if (input.cluster) items.push(...clusterRows(input.cluster));
  return { items };
}

/**
 * Raft needs a majority of managers: one manager is a single point of failure, and an even count
 * tolerates no more losses than the odd count below it.
 */
function clusterRows(c: NonNullable<PostureInput['cluster']>): PostureItem[] {
  const title = 'Swarm managers';
  const managers =
    c.managers <= 1
      ? {
          status: 'warning' as const,
          reason:
            'The swarm has one manager: if its host is lost, nothing can be scheduled or changed until the swarm is rebuilt from a backup.',
          fix: 'Promote two workers on other hosts (`docker node promote <node>` on the manager) for three managers: the swarm then keeps working when one is lost.',
        }
      : c.managers % 2 === 0
        ? {
            status: 'warning' as const,
            reason: `The swarm has ${c.managers} managers: an even count keeps a majority through no more losses than ${c.managers - 1} would.`,
            fix: 'Promote or demote one manager for an odd count (3 or 5).',
          }
        : c.managersReady <= c.managers / 2
          ? {
              status: 'error' as const,
              reason: `Only ${c.managersReady} of ${c.managers} managers are ready: the swarm has lost its majority.`,
              fix: 'Bring the lost managers back, or recover with `docker swarm init --force-new-cluster` on a remaining manager.',
            }
          : {
              status: 'ok' as const,
              reason: `${c.managers} managers (${c.managersReady} ready): the swarm keeps a majority when ${Math.floor((c.managers - 1) / 2)} of them ${c.managers > 3 ? 'are' : 'is'} lost.`,
              fix: 'Nothing to do.',
            };
  const rows: PostureItem[] = [{ code: 'cluster_managers', title, ...managers }];
  rows.push(
    c.down.length
      ? {
          code: 'cluster_nodes',
          status: 'warning',
          title: 'Swarm nodes',
          reason: `Down: ${c.down.join(', ')}. Their tasks were moved to other nodes where they could be.`,
          fix: 'Bring the hosts back, or remove them (DELETE /api/nodes/{id}, or the Nodes page) if they are gone for good.',
        }
      : {
          code: 'cluster_nodes',
          status: 'ok',
          title: 'Swarm nodes',
          reason: 'Every node is up.',
          fix: 'Nothing to do.',
        },
  );
  return rows;
}

/** Says "served over HTTPS" only when Caddy runs our config and serves a valid certificate for the control domain. */
function baseDomainRow(input: PostureInput): PostureItem {
  const title = 'Base domain';
  const domain = input.baseDomain?.trim();
  if (!domain) {
    return {
      code: 'base_domain',
      status: 'warning',
      title,
      reason: 'No base domain is configured, so traffic is not on HTTPS.',
      fix: 'Create a DNS record (and a wildcard) pointing at this host, then set the base domain in the instance settings or SVC_BASE_DOMAIN.',
    };
  }
  const e = input.edge;
  if (!e) {
    return {
      code: 'base_domain',
      status: 'info',
      title,
      reason: `Base domain is ${domain}; whether it is served over HTTPS is known to the running service only.`,
      fix: 'See GET /api/security/posture.',
    };
  }
  if (!e.enabled) {
    return {
      code: 'base_domain',
      status: 'warning',
      title,
      reason: `Base domain is ${domain}, but the proxy is turned off (SVC_PROXY=off): nothing serves it over HTTPS.`,
      fix: 'Run Caddy with its admin endpoint on a unix socket only it and the control plane can open (svc install does; see docs/operating.md), point SVC_CADDY_ADMIN at it and unset SVC_PROXY.',
    };
  }
  if (!e.synced) {
    return {
      code: 'base_domain',
      status: 'error',
      title,
      reason: `Base domain is ${domain}, but the proxy is not in sync: ${e.error ?? 'not synced yet'}. Domains and certificates are not served as configured.`,
      fix: 'Start Caddy (systemctl start caddy-api) and check SVC_CADDY_ADMIN; the control plane reloads its config within 30 seconds.',
    };
  }
  const control = e.controlDomain ?? `svc.${domain}`;
  if (!e.controlCertNotAfter) {
    return {
      code: 'base_domain',
      status: 'warning',
      title,
      reason: `Base domain is ${domain}, but Caddy does not serve a valid certificate for ${control} yet: the control plane is not on HTTPS.`,
      fix: `Point ${control} (and *.${domain}) at this host, keep port 80 reachable for the CA, then check GET /api/domains for the status.`,
    };
  }
  return {
    code: 'base_domain',
    status: 'ok',
    title,
    reason: `Base domain is ${domain}: ${control} is served over HTTPS (certificate valid until ${e.controlCertNotAfter.slice(0, 10)}).`,
    fix: 'Nothing to do.',
  };
}

function masterKeyRow(input: PostureInput): PostureItem {
  const title = 'Master key';
  const file = input.masterKeyFile ?? '<data dir>/master.key';
  if (!input.masterKeySet) {
    return {
      code: 'master_key',
      status: 'error',
      title,
      reason:
        'SVC_MASTER_KEY is missing: secrets (env values, deploy keys, TOTP secrets, webhook URLs) cannot be sealed.',
      fix: 'Set SVC_MASTER_KEY to 64 hex characters (generate with `openssl rand -hex 32`) in the service environment file, restart, and keep a copy somewhere safe.',
    };
  }
  const moveOut =
    `Move it out of the data directory: put SVC_MASTER_KEY=<the 64 hex characters in ${file}> in the service environment ` +
    '(for example /etc/svc/svc.env, owned by root, mode 0600), restart and check that the service starts, ' +
    `then delete ${file}. Keep a copy offline: without the key, sealed secrets cannot be recovered.`;
  if (input.masterKeySource === 'file') {
    return {
      code: 'master_key',
      status: 'warning',
      title,
      reason: `The master key is stored in ${file}, beside the data it protects: anyone with a copy of the data directory (a backup, a snapshot, a stolen disk) can open every sealed secret. A key supplied from outside (SVC_MASTER_KEY) protects more.`,
      fix: moveOut,
    };
  }
  if (input.masterKeySource === 'env' && input.masterKeyFilePresent) {
    return {
      code: 'master_key',
      status: 'warning',
      title,
      reason: `SVC_MASTER_KEY is set, but a key file is still stored beside the data in ${file}.`,
      fix: `Check that you have a copy of SVC_MASTER_KEY outside this host, then delete ${file}.`,
    };
  }
  return {
    code: 'master_key',
    status: 'ok',
    title,
    reason: 'SVC_MASTER_KEY is set: secrets are sealed at rest.',
    fix: 'Nothing to do. Keep a copy of it outside this host.',
  };
}

function requestMonitoringRow(input: PostureInput): PostureItem {
  const title = 'Request monitoring';
  if (!input.monitorEnabled) {
    return {
      code: 'request_monitoring',
      status: 'warning',
      title,
      reason: 'The traffic monitor is turned off (SVC_SECURITY_MONITOR=false), so traffic analysis is off.',
      fix: 'Remove SVC_SECURITY_MONITOR=false from the service environment and restart.',
    };
  }
  const t = input.tailer;
  if (t === null || !t.reading) {
    return {
      code: 'request_monitoring',
      status: 'warning',
      title,
      reason: `The access log${t ? ` ${t.path}` : ''} is not being read${t?.error ? ` (${t.error})` : ''}, so traffic analysis is off.`,
      fix: 'Make the reverse proxy write a JSON access log (Caddy: `log { output file /var/log/caddy/access.log; format json }`), point SVC_ACCESS_LOG at it, and let the service read it.',
    };
  }
  if (t.probed) {
    return {
      code: 'request_monitoring',
      status: 'ok',
      title,
      reason: `${t.path} is readable${t.lastLineAt ? ` (last written ${t.lastLineAt})` : ''}: the service reads it.`,
      fix: 'Nothing to do.',
    };
  }
  return {
    code: 'request_monitoring',
    status: 'ok',
    title,
    reason: `Reading ${t.path} (${t.lines} line${t.lines === 1 ? '' : 's'} so far${t.lastLineAt ? `, last at ${t.lastLineAt}` : ''}).`,
    fix: 'Nothing to do.',
  };
}
