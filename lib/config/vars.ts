// Every SVC_* variable of the control plane, written once: its name, where its value lands in the
// configuration, its default, its parser (lib/config/parse.ts) and the sentence docs/operating.md
// shows. lib/config.ts loads the configuration from this list, and the table in docs/operating.md
// is generated from it (`node scripts/gen-config-docs.mjs`; tests/repo/config-docs.test.ts checks).
import * as p from './parse.js';

export interface ConfigVar<T = unknown> {
  readonly name: `SVC_${string}`;
  /**
   * Where the value lands in the configuration (`port`, `proxy.httpPort`). Without one, a variable
   * is read together with others (SVC_OIDC_*, lib/config.ts) or where it is used (`readBy`).
   */
  readonly key?: string;
  /** The value taken when the variable is unset or blank, as an operator would write it. */
  readonly default?: string;
  /** The docs' Default column when it is not the default as written (`—` when there is none). */
  readonly shown?: string;
  readonly parse?: p.Parse<T>;
  /** The file that reads the variable when it acts, instead of the configuration at boot. */
  readonly readBy?: string;
  /** The Meaning column of docs/operating.md (Markdown). */
  readonly doc: string;
}

export const CONFIG_VARS = [
  { name: 'SVC_PORT', key: 'port', default: '9393', parse: p.int(0, 65535), doc: 'HTTP port' },
  {
    name: 'SVC_HOST',
    key: 'host',
    default: '0.0.0.0',
    parse: p.bindAddress,
    doc: 'Address to bind (the process binds only there); `127.0.0.1` when operators reach the API only through the proxy',
  },
  {
    name: 'SVC_DATA_DIR',
    key: 'dataDir',
    default: './data',
    parse: p.absolutePath,
    doc: 'SQLite file `svc.db`, setup token, master key file, working copies (directory 0700, files 0600)',
  },
  {
    name: 'SVC_DATABASE_URL',
    key: 'databaseUrl',
    parse: p.databaseUrl,
    doc: "`postgres://user:password@host:5432/svc`: the control plane's database on PostgreSQL instead of `<data>/svc.db` (see [The database on PostgreSQL](#the-database-on-postgresql))",
  },
  {
    name: 'SVC_MASTER_KEY',
    key: 'masterKey',
    shown: '`<data>/master.key`',
    parse: p.masterKey,
    doc: '64 hex chars; seals secrets. Wins over the key file; unset, the key file is used (generated on first boot)',
  },
  {
    name: 'SVC_PUBLIC_URL',
    key: 'publicUrl',
    parse: p.publicUrl,
    doc: "Where operators reach the control plane (`https://svc.example.com`): an origin WebSocket cookies are accepted from; webhook URLs shown to operators are built from it, never from a request's Host header",
  },
  {
    name: 'SVC_CONTROL_DOMAIN',
    key: 'proxy.controlDomain',
    shown: '`svc.<SVC_BASE_DOMAIN>`',
    parse: p.hostname,
    doc: "The control plane's own HTTPS name: also an accepted WebSocket origin",
  },
  {
    name: 'SVC_METRICS_TOKEN',
    key: 'metricsToken',
    parse: p.metricsToken,
    doc: 'Bearer token for `GET /metrics` (at least 16 chars); without it `/metrics` is `404`',
  },
  {
    name: 'SVC_TRUSTED_PROXIES',
    key: 'trustedProxies',
    default: '127.0.0.1,::1',
    parse: p.addressList,
    doc: 'IPs/CIDRs whose `X-Forwarded-For` / `X-Forwarded-Proto` are believed',
  },
  {
    name: 'SVC_EXPOSURE',
    key: 'exposure',
    default: 'local',
    parse: p.either('local', 'public'),
    doc: '`local` or `public` (posture checklist)',
  },
  {
    name: 'SVC_BASE_DOMAIN',
    key: 'baseDomain',
    parse: p.hostname,
    doc: 'Base domain: automatic hosts `<app>.<base>` / `<service>.<app>.<base>`; `PUT /api/instance/base-domain` overrides it',
  },
  {
    name: 'SVC_CADDY_ADMIN',
    key: 'proxy.adminUrl',
    default: 'http://127.0.0.1:2019',
    parse: p.adminOrigin,
    doc: "Caddy's admin API: a unix socket `unix//run/caddy/admin.sock` (what `svc install` sets), or a loopback origin",
  },
  {
    name: 'SVC_PROXY',
    key: 'proxy.enabled',
    default: 'on',
    parse: p.bool,
    doc: '`off`: never contact Caddy (domain answers say `proxy: {"synced": false}`)',
  },
  {
    name: 'SVC_PROXY_HTTP_PORT',
    key: 'proxy.httpPort',
    default: '80',
    parse: p.port,
    doc: "Caddy's HTTP listener (answers ACME challenges, then redirects)",
  },
  {
    name: 'SVC_PROXY_HTTPS_PORT',
    key: 'proxy.httpsPort',
    default: '443',
    parse: p.port,
    doc: "Caddy's HTTPS listener (must differ from `SVC_PROXY_HTTP_PORT`)",
  },
  {
    name: 'SVC_PROXY_RESOLVER_PORT',
    key: 'proxy.resolverPort',
    default: '2053',
    parse: p.int(0, 65535),
    doc: "Loopback UDP port of the control plane's DNS server, which Caddy asks where each service's containers are (one host; see \"The edge\"). Keep it fixed: it is part of Caddy's config, so a new port loads a config (`0`: any free port at each start, for tests)",
  },
  {
    name: 'SVC_ACME_CA',
    key: 'proxy.acmeCa',
    default: 'https://acme-v02.api.letsencrypt.org/directory',
    shown: "Let's Encrypt",
    parse: p.acmeDirectory,
    doc: 'ACME directory URL',
  },
  {
    name: 'SVC_ACME_CA_ROOT',
    key: 'proxy.acmeCaRoot',
    parse: p.pemFile,
    doc: "PEM file of a private CA's root to trust (Pebble in tests)",
  },
  {
    name: 'SVC_ACME_EMAIL',
    key: 'proxy.acmeEmail',
    parse: p.email,
    doc: 'Account e-mail given to the CA',
  },
  {
    name: 'SVC_DNS_RESOLVER',
    key: 'proxy.dnsResolver',
    shown: "the system's",
    parse: p.resolverAddress,
    doc: '`ip` or `ip:port` asked by the DNS check (`GET /api/instance/dns-check`, domain statuses)',
  },
  {
    name: 'SVC_PUBLIC_IP',
    key: 'proxy.publicIps',
    shown: 'detected',
    parse: p.ipList,
    doc: 'Comma list of the addresses DNS records must point at',
  },
  {
    name: 'SVC_ALLOW_METADATA',
    key: 'allowMetadata',
    default: 'false',
    parse: p.bool,
    doc: "`true` lets app containers and builds reach link-local addresses (169.254.0.0/16, `fe80::/10`: a cloud's metadata service and the machine's credentials). Otherwise the control plane keeps an nftables table `inet svc_metadata` that drops them from every engine bridge (`docker0`, `br-*`, `docker_gwbridge`); it needs root on the engine's host. The posture's `link_local` row says which holds ([security.md](security.md))",
  },
  {
    name: 'SVC_ENABLE_SHELL',
    key: 'enableShell',
    default: 'false',
    parse: p.bool,
    doc: 'Container shell over WebSocket (`GET /api/apps/{id}/services/{name}/shell`, step-up; off by default; shown in the posture checklist)',
  },
  {
    name: 'SVC_SHELL_IDLE',
    key: 'shellIdleSeconds',
    default: '900',
    parse: p.int(1, 86_400),
    doc: 'Seconds without input or output after which a container shell closes',
  },
  {
    name: 'SVC_SHELL_MAX',
    key: 'shellMaxSeconds',
    default: '28800',
    parse: p.int(1, 7 * 86_400),
    doc: 'Seconds after which a container shell closes whatever its activity (8 hours)',
  },
  {
    name: 'SVC_NOTIFY_ALLOW',
    key: 'notifyAllow',
    default: '',
    parse: p.addressList,
    doc: 'IPs/CIDRs notification and log drain URLs may reach although private or loopback (self-hosted chat, a syslog server or SMTP relay on the LAN; cleartext `http://`, `syslog://` and SMTP without STARTTLS only to these); listed in the posture checklist',
  },
  {
    name: 'SVC_RESOURCE_INTERVAL',
    key: 'observe.resourceIntervalSeconds',
    default: '10',
    parse: p.int(1, 15),
    doc: "Seconds between two readings of every app container's CPU, memory and restarts (1..15; [alerts.md](alerts.md))",
  },
  {
    name: 'SVC_ALERT_INTERVAL',
    key: 'observe.alertIntervalSeconds',
    default: '15',
    parse: p.int(1, 300),
    doc: 'Seconds between two evaluations of the alert rules (1..300; [alerts.md](alerts.md))',
  },
  {
    name: 'SVC_DRAIN_BUFFER',
    key: 'observe.drainBufferLines',
    default: '20000',
    parse: p.int(100, 1_000_000),
    doc: 'Lines each log drain holds while its receiver is slow or away (100..1000000, and at most 16 MiB); the oldest are dropped, and counted, beyond ([log-drains.md](log-drains.md))',
  },
  {
    name: 'SVC_RESTART_MODE',
    shown: 'detected',
    readBy: 'lib/instance/restart.ts',
    doc: '`exit` (a process manager restarts it; exit code 75) or `reexec` (standalone re-executes itself) for `POST /api/instance/restart`; `exit` under systemd (`INVOCATION_ID`) or pm2',
  },
  {
    name: 'SVC_DOCKER_SOCKET',
    key: 'dockerSocket',
    default: '/var/run/docker.sock',
    parse: p.text,
    doc: 'Docker engine socket',
  },
  {
    name: 'SVC_IMAGE_MAP',
    key: 'imageMap',
    default: '{}',
    shown: '—',
    parse: p.imageMap,
    doc: "JSON object: an image reference the product names (databases, add-ons, the runtime images of generated Dockerfiles) -> the reference used instead (a private mirror, pulled with that registry's stored credentials)",
  },
  {
    name: 'SVC_TLS_CERT',
    key: 'tlsCert',
    parse: p.text,
    doc: 'Serve HTTPS directly with this PEM certificate (set together with `SVC_TLS_KEY`)',
  },
  {
    name: 'SVC_TLS_KEY',
    key: 'tlsKey',
    parse: p.text,
    doc: 'The PEM key of `SVC_TLS_CERT`',
  },
  { name: 'SVC_LOG_LEVEL', key: 'logLevel', default: 'info', parse: p.logLevel, doc: 'pino level' },
  {
    name: 'SVC_AUTH_RATE_LIMIT',
    key: 'authRateLimit',
    default: '10',
    parse: p.int(1, 100_000),
    doc: 'Attempts per minute per client address on setup, login, TOTP, step-up',
  },
  {
    name: 'SVC_AUTH_ACCOUNT_LIMIT',
    key: 'authAccountLimit',
    default: '10',
    parse: p.int(1, 100_000),
    doc: 'Failed passwords per account in 15 minutes before unknown devices get `429` for it',
  },
  {
    name: 'SVC_PASSWORD_COST',
    key: 'passwordCost',
    default: '17',
    parse: p.int(10, 20),
    doc: "log2 of scrypt's N for new hashes (OWASP: 17)",
  },
  {
    name: 'SVC_SESSION_IDLE',
    key: 'sessionIdleSeconds',
    default: '43200',
    parse: p.int(60, 30 * 86400),
    doc: 'Session idle expiry, seconds',
  },
  {
    name: 'SVC_SESSION_MAX',
    key: 'sessionMaxSeconds',
    default: '604800',
    parse: p.int(300, 365 * 86400),
    doc: 'Session absolute expiry, seconds',
  },
  {
    name: 'SVC_ACCESS_LOG',
    key: 'accessLog',
    default: '/var/log/caddy/access.log',
    parse: p.text,
    doc: 'Caddy JSON access log to tail',
  },
  {
    name: 'SVC_SECURITY_MONITOR',
    key: 'security.monitor',
    default: 'true',
    parse: p.bool,
    doc: 'Traffic anomaly monitor',
  },
  {
    name: 'SVC_SECURITY_WINDOW',
    key: 'security.windowSeconds',
    default: '60',
    parse: p.int(1, 3600),
    doc: 'Sliding window, seconds',
  },
  {
    name: 'SVC_SECURITY_REQUEST_THRESHOLD',
    key: 'security.requestThreshold',
    default: '300',
    parse: p.int(1, 10_000_000),
    doc: 'Requests per window from one IP',
  },
  {
    name: 'SVC_SECURITY_ERROR_THRESHOLD',
    key: 'security.errorThreshold',
    default: '100',
    parse: p.int(1, 10_000_000),
    doc: '4xx/5xx per window from one IP',
  },
  {
    name: 'SVC_SECURITY_COOLDOWN',
    key: 'security.cooldownSeconds',
    default: '600',
    parse: p.int(1, 7 * 86400),
    doc: 'Seconds before the same IP can trip again',
  },
  {
    name: 'SVC_SECURITY_MAX_IPS',
    key: 'security.maxIps',
    default: '1024',
    parse: p.int(1, 1_000_000),
    doc: 'Per-IP table bound (least recently seen evicted)',
  },
  {
    name: 'SVC_SECURITY_ALLOWLIST',
    key: 'security.allowlist',
    default: '',
    parse: p.addressList,
    doc: 'IPs/CIDRs whose breaches are recorded but not notified',
  },
  {
    name: 'SVC_SECURITY_AGENT',
    key: 'security.agent',
    default: 'false',
    parse: p.bool,
    doc: "Read the host agent's snapshot (`svc security-agent on` sets it)",
  },
  {
    name: 'SVC_SECURITY_EXPECT_FIREWALL',
    key: 'security.expectFirewall',
    default: 'true',
    parse: p.bool,
    doc: '`false`: firewall/fail2ban rows read "disabled by operator"',
  },
  {
    name: 'SVC_SECURITY_DIR',
    key: 'security.dir',
    default: '/var/lib/svc/security',
    parse: p.absolutePath,
    doc: 'Where the host agent writes its snapshot',
  },
  {
    name: 'SVC_KEEP_IMAGES',
    key: 'deploy.keepImages',
    default: '5',
    parse: p.int(1, 100),
    doc: 'Deployments per app whose images are kept for rollback: the ones built, and the pulled ones held by keep tags (older ones are pruned; see [Images, registries and deploy hooks](#images-registries-and-deploy-hooks))',
  },
  {
    name: 'SVC_DEPLOY_TIMEOUT',
    key: 'deploy.timeoutSeconds',
    default: '3600',
    parse: p.int(60, 7 * 86400),
    doc: 'Seconds after which the reaper fails a stuck deployment',
  },
  {
    name: 'SVC_CADDY_STORAGE',
    key: 'proxy.caddyStorage',
    default: '/var/lib/caddy/.local/share/caddy',
    parse: p.text,
    doc: "Caddy's data directory, included in instance backups (certificates survive a restore); Debian's caddy service keeps it in this default",
  },
  {
    name: 'SVC_RUNS_MAX',
    key: 'deploy.runsMax',
    default: '64',
    parse: p.int(1, 1000),
    doc: 'Job runs and one-off commands running at once across apps (1..1000); more wait queued ([jobs.md](jobs.md))',
  },
  {
    name: 'SVC_BUILD_CONCURRENCY',
    key: 'deploy.buildConcurrency',
    default: '1',
    parse: p.int(1, 64),
    doc: 'Image builds that may run at once (different apps; one deployment per app at a time), within the deploy concurrency ([builds.md](builds.md))',
  },
  {
    name: 'SVC_CLUSTER',
    key: 'cluster.mode',
    default: 'off',
    parse: p.either('off', 'swarm'),
    doc: '`swarm` runs apps as Docker Swarm services across the nodes of a swarm this host manages ([cluster.md](cluster.md))',
  },
  {
    name: 'SVC_REGISTRY',
    key: 'cluster.registry',
    parse: p.registryHost,
    doc: "In cluster mode, an operator's registry (`host[:port]`) that every node can pull from; unset, the control plane runs its own with its own certificate authority ([cluster.md](cluster.md))",
  },
  {
    name: 'SVC_CLUSTER_JOIN_TTL',
    key: 'cluster.joinTtlSeconds',
    default: '3600',
    parse: p.int(10, 7 * 86400),
    doc: "Seconds a node join command works (10..604800); then the swarm's worker token is rotated ([cluster.md](cluster.md))",
  },
  {
    name: 'SVC_WAKE_TIMEOUT',
    key: 'wakeTimeoutSeconds',
    default: '30',
    parse: p.int(1, 600),
    doc: 'Seconds a request to a sleeping app waits for it to wake before `503` with `Retry-After` ([sleeping-apps.md](sleeping-apps.md))',
  },
  {
    name: 'SVC_WAKE_MAX_HELD',
    key: 'wakeMaxHeld',
    default: '256',
    parse: p.int(1, 100_000),
    doc: 'Requests and upgrades the wake path holds at once (waiting, forwarded or piped); one more answers `503` with `Retry-After` ([sleeping-apps.md](sleeping-apps.md))',
  },
  {
    name: 'SVC_WAKE_IDLE',
    key: 'wakeIdleSeconds',
    default: '3600',
    parse: p.int(1, 7 * 86400),
    doc: 'Seconds a WebSocket (or other upgrade) piped through the wake path may carry no traffic before it is closed',
  },
  {
    name: 'SVC_OIDC_ISSUER',
    parse: p.oidcIssuer,
    doc: 'Sign-in with an OpenID Connect provider: its issuer URL; set together with `SVC_OIDC_CLIENT_ID`, `SVC_OIDC_CLIENT_SECRET` and `SVC_OIDC_ROLE_MAP` ([oidc.md](oidc.md))',
  },
  {
    name: 'SVC_OIDC_CLIENT_ID',
    parse: p.text,
    doc: 'The client identifier registered with the provider',
  },
  {
    name: 'SVC_OIDC_CLIENT_SECRET',
    parse: p.text,
    doc: 'The client secret registered with the provider',
  },
  {
    name: 'SVC_OIDC_ROLE_CLAIM',
    default: 'groups',
    parse: p.claimName,
    doc: 'The claim whose values map to roles',
  },
  {
    name: 'SVC_OIDC_ROLE_MAP',
    parse: p.roleMap,
    doc: 'JSON object from a claim value to a role (`owner`, `admin`, `deployer`, `viewer`); a person mapped to none is refused',
  },
  {
    name: 'SVC_OIDC_SCOPES',
    default: 'openid profile email',
    parse: p.scopes,
    doc: 'Scopes the authorization request asks for (must include `openid`)',
  },
  {
    name: 'SVC_OIDC_NAME',
    shown: "the issuer's host",
    parse: p.buttonName,
    doc: "The provider's name on the sign-in button",
  },
] as const satisfies readonly ConfigVar[];

export type ConfigVarName = (typeof CONFIG_VARS)[number]['name'];

/** The docs' table rows (docs/operating.md, under "| Variable | Default | Meaning |"). */
export function configDocsRows(vars: readonly ConfigVar[] = CONFIG_VARS): string[] {
  return vars.map((v) => {
    const shown = v.shown ?? (v.default ? `\`${v.default}\`` : '—');
    return `| \`${v.name}\` | ${shown} | ${v.doc} |`;
  });
}
