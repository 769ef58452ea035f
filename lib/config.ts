// Configuration is read once at boot; an invalid value stops the boot with the variable's name.
import { isIP } from 'node:net';
import { readFileSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';
import { posix, resolve } from 'node:path';
import { checkHostname } from './util/hostname.js';
import { ROLES, isRole, type Role } from './util/role-names.js';

export const EXPOSURES = ['local', 'public'] as const;
export type Exposure = (typeof EXPOSURES)[number];

// ctx.env of every handler carries it (the service registry of lib/http/handler.ts).
declare module './http/handler.js' {
  interface Services {
    config: Config;
  }
}

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  /** SVC_DATABASE_URL: the control database on PostgreSQL instead of `<dataDir>/svc.db` (null: SQLite). */
  databaseUrl: string | null;
  masterKey: Buffer | null;
  /** Where the master key came from: SVC_MASTER_KEY, or `<dataDir>/master.key` (set at boot). */
  masterKeySource: 'env' | 'file' | null;
  metricsToken: string | null;
  trustedProxies: string[];
  exposure: Exposure;
  baseDomain: string | null;
  /** Host of the dashboard and API over HTTPS (SVC_CONTROL_DOMAIN; default svc.<base domain>). */
  controlDomain: string | null;
  /**
   * Where forges and browsers reach the control plane (SVC_PUBLIC_URL), without a trailing slash;
   * the webhook URL shown to the operator is built from it, never from a request's Host header.
   */
  publicUrl: string | null;
  /** Sign-in with an OpenID Connect provider (SVC_OIDC_*); null when SVC_OIDC_ISSUER is unset. */
  oidc: OidcConfig | null;
  enableShell: boolean;
  /** SVC_SHELL_IDLE: seconds without a byte either way after which a container shell closes. */
  shellIdleSeconds: number;
  /** SVC_SHELL_MAX: seconds after which a container shell closes whatever its activity. */
  shellMaxSeconds: number;
  /** SVC_IMAGE_MAP: catalog image reference -> the reference pulled instead (a mirror, local test images). */
  imageMap: Record<string, string>;
  /** SVC_NOTIFY_ALLOW: IPs/CIDRs notification URLs may reach although private (self-hosted chat). */
  notifyAllow: string[];
  dockerSocket: string;
  tlsCert: string | null;
  tlsKey: string | null;
  logLevel: string;
  /** Attempts per minute per client address on setup, login, TOTP and step-up. */
  authRateLimit: number;
  /** Failed passwords per account in 15 minutes before strangers' attempts on it get 429. */
  authAccountLimit: number;
  /** log2 of scrypt's N for new password hashes; OWASP's 2^17 unless lowered for tests. */
  passwordCost: number;
  sessionIdleSeconds: number;
  sessionMaxSeconds: number;
  accessLog: string;
  /** SVC_WAKE_TIMEOUT: how long a request to a sleeping app waits for it to wake, in seconds. */
  wakeTimeoutSeconds: number;
  /** SVC_ALLOW_METADATA=true: app containers and builds may reach link-local addresses (cloud metadata). */
  allowMetadata: boolean;
  /** SVC_WAKE_MAX_HELD: requests and upgrades the wake path holds at once (more: 503 with Retry-After). */
  wakeMaxHeld: number;
  /** SVC_WAKE_IDLE: seconds a piped upgrade may carry no traffic before the wake path closes it. */
  wakeIdleSeconds: number;
  /** The edge: Caddy driven through its admin API, ACME, DNS checks. */
  proxy: {
    /** SVC_PROXY: false keeps the control plane away from Caddy entirely (tests without one). */
    enabled: boolean;
    /** SVC_CADDY_ADMIN, an http:// origin or a unix socket (`unix//run/caddy/admin.sock`). */
    adminUrl: string;
    /**
     * SVC_PROXY_RESOLVER_PORT: the loopback UDP port of the DNS server Caddy asks for services'
     * addresses (lib/proxy/resolver.ts); 0 takes a free one at each start (tests).
     */
    resolverPort: number;
    httpPort: number;
    httpsPort: number;
    acmeCa: string;
    /** PEM file Caddy trusts when it talks to the ACME CA (a private CA, Pebble in tests). */
    acmeCaRoot: string | null;
    acmeEmail: string | null;
    /** SVC_DNS_RESOLVER: `ip` or `ip:port` (`[v6]:port`); null uses the system's resolvers. */
    dnsResolver: string | null;
    /** SVC_PUBLIC_IP: the addresses domains must resolve to; null detects them. */
    publicIps: string[] | null;
    /** SVC_CONTROL_DOMAIN; null means `svc.<base domain>` when a base domain is set. */
    controlDomain: string | null;
    /**
     * SVC_CADDY_STORAGE: Caddy's data directory (certificates, ACME accounts), which instance
     * backups include when it is readable here; Debian's caddy service keeps it in this default.
     */
    caddyStorage: string;
  };
  /** Beyond one host (docs/cluster.md). */
  cluster: {
    /** SVC_CLUSTER: `off` runs apps as containers on one engine; `swarm` as Swarm services. */
    mode: 'off' | 'swarm';
    /** SVC_REGISTRY: an operator's registry (`host[:port]`); null: the control plane runs its own. */
    registry: string | null;
    /** A join command's lifetime; the swarm's worker token is rotated when it passes (SVC_CLUSTER_JOIN_TTL). */
    joinTtlSeconds: number;
  };
  /** Resource history, alert rules and log drains (docs/alerts.md, docs/log-drains.md). */
  observe: {
    /** SVC_RESOURCE_INTERVAL: seconds between two readings of every app container's CPU and memory. */
    resourceIntervalSeconds: number;
    /** SVC_ALERT_INTERVAL: seconds between two evaluations of the alert rules. */
    alertIntervalSeconds: number;
    /** SVC_DRAIN_BUFFER: lines each log drain holds while its receiver is slow or away. */
    drainBufferLines: number;
  };
  deploy: {
    /** Per app, the images of this many newest deployments are kept for rollback (SVC_KEEP_IMAGES). */
    keepImages: number;
    /** A deployment still running after this many seconds is failed by the reaper (SVC_DEPLOY_TIMEOUT). */
    timeoutSeconds: number;
    /** Image builds that may run at once, across apps (SVC_BUILD_CONCURRENCY). */
    buildConcurrency: number;
    /** Job runs and one-off commands running at once, across apps; more wait queued (SVC_RUNS_MAX). */
    runsMax: number;
  };
  security: {
    expectFirewall: boolean;
    monitor: boolean;
    agent: boolean;
    windowSeconds: number;
    requestThreshold: number;
    errorThreshold: number;
    cooldownSeconds: number;
    maxIps: number;
    allowlist: string[];
    dir: string;
  };
}

export interface OidcConfig {
  /** SVC_OIDC_ISSUER: the provider's issuer identifier (discovery is under it). */
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** SVC_OIDC_ROLE_CLAIM: the ID token or userinfo claim (a string or a list) that decides the role. */
  roleClaim: string;
  /** SVC_OIDC_ROLE_MAP: claim value -> role; a person none of whose values is here is refused. */
  roleMap: Record<string, Role>;
  /** SVC_OIDC_SCOPES: what the authorization request asks for. */
  scopes: string;
  /** SVC_OIDC_NAME: the provider's name on the sign-in button (default: the issuer's host). */
  name: string;
}

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`);
  }
}

type Env = Record<string, string | undefined>;

function str(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

function int(env: Env, name: string, def: number, min: number, max: number): number {
  const raw = str(env, name);
  if (raw === undefined) return def;
  if (!/^-?\d+$/.test(raw)) throw new ConfigError(name, `must be a whole number, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${n}`);
  return n;
}

function bool(env: Env, name: string, def: boolean): boolean {
  const raw = str(env, name);
  if (raw === undefined) return def;
  const v = raw.toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(v)) return true;
  if (['0', 'false', 'no', 'off'].includes(v)) return false;
  throw new ConfigError(name, `must be true or false, got "${raw}"`);
}

/** The entries of a comma list, trimmed, empty ones dropped. */
const commaList = (raw: string): string[] =>
  raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** A comma list of IPs or CIDRs; each entry is checked now so a typo cannot silently trust nobody. */
function addressList(env: Env, name: string, def: string): string[] {
  const items = commaList(str(env, name) ?? def);
  for (const item of items) {
    const [addr, bits, extra] = item.split('/');
    const family = isIP(addr ?? '');
    const okBits = bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= (family === 6 ? 128 : 32));
    if (!family || !okBits || extra !== undefined)
      throw new ConfigError(name, `"${item}" is not an IP address or CIDR`);
  }
  return items;
}

/** An absolute http(s) URL with a host, optionally a path prefix; no credentials, query or fragment. */
function publicUrlOf(raw: string | undefined): string | null {
  if (raw === undefined) return null;
  const name = 'SVC_PUBLIC_URL';
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new ConfigError(name, `"${raw}" is not a URL (like https://paas.example.com)`);
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:')
    throw new ConfigError(name, 'must start with https:// (or http://)');
  if (!u.hostname) throw new ConfigError(name, 'has no host');
  if (u.username || u.password) throw new ConfigError(name, 'must not carry credentials');
  if (u.search || u.hash || raw.includes('?') || raw.includes('#'))
    throw new ConfigError(name, 'must not have a query or a fragment');
  return `${u.origin}${u.pathname.replace(/\/+$/, '')}`;
}

const IMAGE_REF = /^[a-z0-9][a-z0-9._\/:@-]{0,254}$/i;

function imageMapOf(raw: string | undefined): Record<string, string> {
  if (raw === undefined) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ConfigError(
      'SVC_IMAGE_MAP',
      'is not JSON (expected an object from image reference to image reference)',
    );
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new ConfigError('SVC_IMAGE_MAP', 'must be a JSON object');
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(parsed as Record<string, unknown>)) {
    if (!IMAGE_REF.test(k) || typeof v !== 'string' || !IMAGE_REF.test(v))
      throw new ConfigError(
        'SVC_IMAGE_MAP',
        `entry "${k.slice(0, 80)}" is not an image reference mapped to an image reference`,
      );
    out[k] = v;
  }
  return out;
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/**
 * SVC_OIDC_*: all or nothing. The role map is checked now: a typo in a role name would otherwise
 * surface as every person being refused at their first sign-in.
 */
function oidcOf(env: Env): OidcConfig | null {
  const issuerRaw = str(env, 'SVC_OIDC_ISSUER');
  const others = ['SVC_OIDC_CLIENT_ID', 'SVC_OIDC_CLIENT_SECRET', 'SVC_OIDC_ROLE_MAP'] as const;
  if (issuerRaw === undefined) {
    const stray = others.find((n) => str(env, n) !== undefined);
    if (stray) throw new ConfigError('SVC_OIDC_ISSUER', `is required when ${stray} is set`);
    return null;
  }
  let issuer: URL;
  try {
    issuer = new URL(issuerRaw);
  } catch {
    throw new ConfigError(
      'SVC_OIDC_ISSUER',
      `"${issuerRaw}" is not a URL (like https://id.example.com/realms/ops)`,
    );
  }
  // Plain http only to a provider on this host (a test or a sidecar): anywhere else the token exchange would travel in clear.
  if (issuer.protocol !== 'https:' && !(issuer.protocol === 'http:' && LOOPBACK_HOSTS.has(issuer.hostname))) {
    throw new ConfigError('SVC_OIDC_ISSUER', 'must be an https:// URL (http:// only on loopback)');
  }
  if (issuer.username || issuer.password || issuer.search || issuer.hash)
    throw new ConfigError('SVC_OIDC_ISSUER', 'must not carry credentials, a query or a fragment');
  for (const n of others)
    if (str(env, n) === undefined) throw new ConfigError(n, 'is required when SVC_OIDC_ISSUER is set');
  const roleClaim = str(env, 'SVC_OIDC_ROLE_CLAIM') ?? 'groups';
  if (!/^[A-Za-z0-9_.:/-]{1,128}$/.test(roleClaim))
    throw new ConfigError('SVC_OIDC_ROLE_CLAIM', `"${roleClaim.slice(0, 80)}" is not a claim name`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(str(env, 'SVC_OIDC_ROLE_MAP')!);
  } catch {
    throw new ConfigError(
      'SVC_OIDC_ROLE_MAP',
      'is not JSON (expected an object from a claim value to a role, like {"ops-admins":"admin"})',
    );
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new ConfigError('SVC_OIDC_ROLE_MAP', 'must be a JSON object from a claim value to a role');
  const roleMap: Record<string, Role> = Object.create(null);
  for (const [value, role] of Object.entries(parsed as Record<string, unknown>)) {
    if (!isRole(role))
      throw new ConfigError(
        'SVC_OIDC_ROLE_MAP',
        `"${value.slice(0, 80)}" maps to ${JSON.stringify(role)}, not one of ${ROLES.join(', ')}`,
      );
    roleMap[value] = role;
  }
  if (Object.keys(roleMap).length === 0)
    throw new ConfigError('SVC_OIDC_ROLE_MAP', 'maps nothing: nobody could sign in');
  const scopes = str(env, 'SVC_OIDC_SCOPES') ?? 'openid profile email';
  if (!scopes.split(/\s+/).includes('openid') || !/^[\x21\x23-\x5b\x5d-\x7e ]+$/.test(scopes)) {
    throw new ConfigError('SVC_OIDC_SCOPES', 'must be a space-separated list of scopes that includes openid');
  }
  const name = str(env, 'SVC_OIDC_NAME') ?? issuer.host;
  if (name.length > 64) throw new ConfigError('SVC_OIDC_NAME', 'must be at most 64 characters');
  return {
    // As written: discovery compares it character for character with what the provider announces.
    issuer: issuerRaw,
    clientId: str(env, 'SVC_OIDC_CLIENT_ID')!,
    clientSecret: str(env, 'SVC_OIDC_CLIENT_SECRET')!,
    roleClaim,
    roleMap,
    scopes,
    name,
  };
}

export function loadConfig(env: Env = process.env): Config {
  const masterRaw = str(env, 'SVC_MASTER_KEY');
  if (masterRaw !== undefined && !/^[0-9a-fA-F]{64}$/.test(masterRaw)) {
    throw new ConfigError('SVC_MASTER_KEY', 'must be 64 hexadecimal characters (32 bytes)');
  }
  const exposure = str(env, 'SVC_EXPOSURE') ?? 'local';
  if (exposure !== 'local' && exposure !== 'public')
    throw new ConfigError('SVC_EXPOSURE', `must be "local" or "public", got "${exposure}"`);
  const baseDomain = hostnameVar(env, 'SVC_BASE_DOMAIN');
  const explicitControl = hostnameVar(env, 'SVC_CONTROL_DOMAIN');
  const controlDomain = explicitControl ?? (baseDomain ? `svc.${baseDomain}` : null);
  const publicUrl = publicUrlOf(str(env, 'SVC_PUBLIC_URL'));
  const host = str(env, 'SVC_HOST') ?? '0.0.0.0';
  if (!isIP(host) && host !== 'localhost')
    throw new ConfigError('SVC_HOST', `"${host}" is not an IP address`);
  const tlsCert = str(env, 'SVC_TLS_CERT') ?? null;
  const tlsKey = str(env, 'SVC_TLS_KEY') ?? null;
  if ((tlsCert === null) !== (tlsKey === null)) {
    throw new ConfigError(
      tlsCert ? 'SVC_TLS_KEY' : 'SVC_TLS_CERT',
      'SVC_TLS_CERT and SVC_TLS_KEY must be set together',
    );
  }
  const metricsToken = str(env, 'SVC_METRICS_TOKEN') ?? null;
  if (metricsToken !== null && metricsToken.length < 16) {
    throw new ConfigError('SVC_METRICS_TOKEN', 'must be at least 16 characters');
  }
  const logLevel = str(env, 'SVC_LOG_LEVEL') ?? 'info';
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(logLevel)) {
    throw new ConfigError('SVC_LOG_LEVEL', `unknown level "${logLevel}"`);
  }
  const dataDir = resolve(str(env, 'SVC_DATA_DIR') ?? './data');
  const databaseUrl = str(env, 'SVC_DATABASE_URL') ?? null;
  if (databaseUrl !== null && !/^postgres(ql)?:\/\/[^\s]+$/i.test(databaseUrl))
    throw new ConfigError('SVC_DATABASE_URL', 'must be a postgres:// (or postgresql://) URL');
  const httpPort = port(env, 'SVC_PROXY_HTTP_PORT', 80);
  const httpsPort = port(env, 'SVC_PROXY_HTTPS_PORT', 443);
  if (httpPort === httpsPort)
    throw new ConfigError('SVC_PROXY_HTTPS_PORT', 'must differ from SVC_PROXY_HTTP_PORT');
  const acmeCa = str(env, 'SVC_ACME_CA') ?? 'https://acme-v02.api.letsencrypt.org/directory';
  try {
    if (new URL(acmeCa).protocol !== 'https:') throw new Error();
  } catch {
    throw new ConfigError('SVC_ACME_CA', `must be the https:// URL of an ACME directory, got "${acmeCa}"`);
  }
  const acmeEmail = str(env, 'SVC_ACME_EMAIL') ?? null;
  if (acmeEmail !== null && !/^[^\s@<>()[\],;:"]+@[^\s@<>()[\],;:"]+\.[^\s@<>()[\],;:"]+$/.test(acmeEmail)) {
    throw new ConfigError('SVC_ACME_EMAIL', `"${acmeEmail}" is not an email address`);
  }
  return {
    port: int(env, 'SVC_PORT', 9393, 0, 65535),
    host,
    dataDir,
    databaseUrl,
    masterKey: masterRaw ? Buffer.from(masterRaw, 'hex') : null,
    masterKeySource: masterRaw ? 'env' : null,
    metricsToken,
    trustedProxies: addressList(env, 'SVC_TRUSTED_PROXIES', '127.0.0.1,::1'),
    exposure,
    baseDomain,
    controlDomain,
    publicUrl,
    oidc: oidcOf(env),
    enableShell: bool(env, 'SVC_ENABLE_SHELL', false),
    shellIdleSeconds: int(env, 'SVC_SHELL_IDLE', 15 * 60, 1, 86_400),
    shellMaxSeconds: int(env, 'SVC_SHELL_MAX', 8 * 3600, 1, 7 * 86_400),
    imageMap: imageMapOf(str(env, 'SVC_IMAGE_MAP')),
    notifyAllow: addressList(env, 'SVC_NOTIFY_ALLOW', ''),
    dockerSocket: str(env, 'SVC_DOCKER_SOCKET') ?? '/var/run/docker.sock',
    tlsCert,
    tlsKey,
    logLevel,
    authRateLimit: int(env, 'SVC_AUTH_RATE_LIMIT', 10, 1, 100_000),
    authAccountLimit: int(env, 'SVC_AUTH_ACCOUNT_LIMIT', 10, 1, 100_000),
    passwordCost: int(env, 'SVC_PASSWORD_COST', 17, 10, 20),
    sessionIdleSeconds: int(env, 'SVC_SESSION_IDLE', 12 * 3600, 60, 30 * 86400),
    sessionMaxSeconds: int(env, 'SVC_SESSION_MAX', 7 * 86400, 300, 365 * 86400),
    accessLog: str(env, 'SVC_ACCESS_LOG') ?? '/var/log/caddy/access.log',
    wakeTimeoutSeconds: int(env, 'SVC_WAKE_TIMEOUT', 30, 1, 600),
    wakeMaxHeld: int(env, 'SVC_WAKE_MAX_HELD', 256, 1, 100_000),
    allowMetadata: bool(env, 'SVC_ALLOW_METADATA', false),
    wakeIdleSeconds: int(env, 'SVC_WAKE_IDLE', 3600, 1, 7 * 86400),
    proxy: {
      enabled: bool(env, 'SVC_PROXY', true),
      adminUrl: adminOrigin(env, 'SVC_CADDY_ADMIN', 'http://127.0.0.1:2019'),
      resolverPort: int(env, 'SVC_PROXY_RESOLVER_PORT', 2053, 0, 65535),
      httpPort,
      httpsPort,
      acmeCa,
      acmeCaRoot: pemFile(env, 'SVC_ACME_CA_ROOT'),
      acmeEmail,
      dnsResolver: resolverAddress(env, 'SVC_DNS_RESOLVER'),
      publicIps: ipList(env, 'SVC_PUBLIC_IP'),
      controlDomain: explicitControl,
      caddyStorage: str(env, 'SVC_CADDY_STORAGE') ?? '/var/lib/caddy/.local/share/caddy',
    },
    cluster: {
      mode: clusterMode(env),
      registry: registryHost(env, 'SVC_REGISTRY'),
      joinTtlSeconds: int(env, 'SVC_CLUSTER_JOIN_TTL', 3600, 10, 7 * 86400),
    },
    observe: {
      resourceIntervalSeconds: int(env, 'SVC_RESOURCE_INTERVAL', 10, 1, 15),
      alertIntervalSeconds: int(env, 'SVC_ALERT_INTERVAL', 15, 1, 300),
      drainBufferLines: int(env, 'SVC_DRAIN_BUFFER', 20_000, 100, 1_000_000),
    },
    deploy: {
      keepImages: int(env, 'SVC_KEEP_IMAGES', 5, 1, 100),
      timeoutSeconds: int(env, 'SVC_DEPLOY_TIMEOUT', 3600, 60, 7 * 86400),
      buildConcurrency: int(env, 'SVC_BUILD_CONCURRENCY', 1, 1, 64),
      runsMax: int(env, 'SVC_RUNS_MAX', 64, 1, 1000),
    },
    security: {
      expectFirewall: bool(env, 'SVC_SECURITY_EXPECT_FIREWALL', true),
      monitor: bool(env, 'SVC_SECURITY_MONITOR', true),
      agent: bool(env, 'SVC_SECURITY_AGENT', false),
      windowSeconds: int(env, 'SVC_SECURITY_WINDOW', 60, 1, 3600),
      requestThreshold: int(env, 'SVC_SECURITY_REQUEST_THRESHOLD', 300, 1, 10_000_000),
      errorThreshold: int(env, 'SVC_SECURITY_ERROR_THRESHOLD', 100, 1, 10_000_000),
      cooldownSeconds: int(env, 'SVC_SECURITY_COOLDOWN', 600, 1, 7 * 86400),
      maxIps: int(env, 'SVC_SECURITY_MAX_IPS', 1024, 1, 1_000_000),
      allowlist: addressList(env, 'SVC_SECURITY_ALLOWLIST', ''),
      dir: resolve(str(env, 'SVC_SECURITY_DIR') ?? '/var/lib/svc/security'),
    },
  };
}

function clusterMode(env: Env): 'off' | 'swarm' {
  const v = str(env, 'SVC_CLUSTER') ?? 'off';
  if (v !== 'off' && v !== 'swarm')
    throw new ConfigError('SVC_CLUSTER', `must be "off" or "swarm", got "${v}"`);
  return v;
}

/** `host[:port]` of a registry, the form engines use in image references (no scheme, no path). */
function registryHost(env: Env, name: string): string | null {
  const v = str(env, name);
  if (v === undefined) return null;
  const m = /^([a-z0-9]([a-z0-9.-]{0,252}[a-z0-9])?|\[[0-9a-f:.]+\])(:(\d{1,5}))?$/i.exec(v);
  if (!m || (m[4] !== undefined && (Number(m[4]) < 1 || Number(m[4]) > 65535)))
    throw new ConfigError(name, `must be a registry's host[:port] (no scheme, no path), got "${v}"`);
  return v.toLowerCase();
}

function port(env: Env, name: string, def: number): number {
  return int(env, name, def, 1, 65535);
}

/** An http:// origin (scheme, host, port; no path) or a unix socket: Caddy's admin endpoint. */
function adminOrigin(env: Env, name: string, def: string): string {
  const raw = str(env, name) ?? def;
  if (raw.startsWith('unix/')) {
    // Caddy's syntax for a unix socket: unix//run/caddy/admin.sock (an absolute path after "unix/").
    const path = raw.slice('unix/'.length);
    if (
      !path.startsWith('/') ||
      path.includes('\0') ||
      path.includes('|') ||
      posix.normalize(path) !== path
    ) {
      throw new ConfigError(name, `"${raw}" is not a unix socket address (like unix//run/caddy/admin.sock)`);
    }
    return raw;
  }
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new ConfigError(name, `"${raw}" is not a URL (like http://127.0.0.1:2019)`);
  }
  if (u.protocol !== 'http:')
    throw new ConfigError(name, `must be an http:// URL or unix//<socket path>, got "${u.protocol}"`);
  if (u.username || u.password) throw new ConfigError(name, 'must not carry credentials');
  if ((u.pathname !== '/' && u.pathname !== '') || u.search || u.hash)
    throw new ConfigError(name, 'must be an origin without a path, like http://127.0.0.1:2019');
  const p = u.port || '80';
  return `http://${u.hostname}:${p}`;
}

/** `ip` or `ip:port` (`[v6]:port`), normalised to what node:dns's setServers takes. */
function resolverAddress(env: Env, name: string): string | null {
  const raw = str(env, name);
  if (raw === undefined) return null;
  if (isIP(raw)) return raw;
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|(\d{1,3}(?:\.\d{1,3}){3})):(\d{1,5})$/.exec(raw);
  const host = m?.[1] ?? m?.[2];
  const p = Number(m?.[3]);
  if (!m || !host || !isIP(host) || !(p >= 1 && p <= 65535))
    throw new ConfigError(name, `"${raw}" is not an IP address or ip:port`);
  return isIP(host) === 6 ? `[${host}]:${p}` : `${host}:${p}`;
}

function ipList(env: Env, name: string): string[] | null {
  const raw = str(env, name);
  if (raw === undefined) return null;
  const items = commaList(raw);
  if (items.length === 0) throw new ConfigError(name, 'must list at least one IP address');
  for (const ip of items) if (!isIP(ip)) throw new ConfigError(name, `"${ip}" is not an IP address`);
  return items.map((ip) => (isIP(ip) === 6 ? ip.toLowerCase() : ip));
}

function hostnameVar(env: Env, name: string): string | null {
  const raw = str(env, name);
  if (raw === undefined) return null;
  const r = checkHostname(raw);
  if (!r.ok) throw new ConfigError(name, r.message);
  return r.hostname;
}

/** A PEM file that must exist and hold a certificate now, not when Caddy first needs it. */
function pemFile(env: Env, name: string): string | null {
  const raw = str(env, name);
  if (raw === undefined) return null;
  const path = resolve(raw);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new ConfigError(name, `cannot read ${path} (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  try {
    new X509Certificate(text);
  } catch {
    throw new ConfigError(name, `${path} does not hold a PEM certificate`);
  }
  return path;
}

/**
 * The service's environment file (`KEY=value` lines, as systemd's EnvironmentFile reads them):
 * `#` and `;` comments, an optional `export `, values optionally in single or double quotes.
 */
export function parseEnvFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const m = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line);
    if (!m) continue;
    let value = m[2]!.trim();
    const q = value[0];
    if ((q === '"' || q === "'") && value.length >= 2 && value.endsWith(q)) {
      value = value.slice(1, -1);
      if (q === '"') value = value.replace(/\\(["\\$`])/g, '$1');
    }
    out[m[1]!] = value;
  }
  return out;
}
