// Configuration is read once at boot; an invalid value stops the boot with the variable's name.
// The variables, their defaults, parsers and documentation are one list (lib/config/vars.ts); the
// configuration's type and its loader are derived from it.
import { CONFIG_VARS, type ConfigVar, type ConfigVarName } from './config/vars.js';
import { ConfigError } from './config/parse.js';
import type { Role } from './util/role-names.js';

export { ConfigError } from './config/parse.js';

export const EXPOSURES = ['local', 'public'] as const;
export type Exposure = (typeof EXPOSURES)[number];

// ctx.env of every handler carries it (the service registry of lib/http/handler.ts).
declare module './http/handler.js' {
  interface Services {
    config: Config;
  }
}

type Var = (typeof CONFIG_VARS)[number];
type Parsed<E> = E extends { parse: (...a: never[]) => infer T } ? T : never;
/** A variable's value: what its parser returns, or null when it is unset and has no default. */
type ValueOf<E> = E extends { default: string } ? Parsed<E> : Parsed<E> | null;
type KeyOf<E> = E extends { key: infer K extends string } ? K : never;
/** Every keyed variable's value by its key (`port`, `proxy.httpPort`). */
type Flat = { [E in Var as KeyOf<E>]: ValueOf<E> };
type GroupOf<K> = K extends `${infer G}.${string}` ? G : never;
type Nested = { [K in keyof Flat as K extends `${string}.${string}` ? never : K]: Flat[K] } & {
  [G in GroupOf<keyof Flat>]: { [K in keyof Flat as K extends `${G}.${infer R}` ? R : never]: Flat[K] };
};

/** The configuration: every keyed variable of lib/config/vars.ts, and what is derived from several. */
export type Config = Nested & {
  /** Where the master key came from: SVC_MASTER_KEY, or `<dataDir>/master.key` (set at boot). */
  masterKeySource: 'env' | 'file' | null;
  /** Host of the dashboard and API over HTTPS (SVC_CONTROL_DOMAIN; default svc.<base domain>). */
  controlDomain: string | null;
  /** Sign-in with an OpenID Connect provider (SVC_OIDC_*); null when SVC_OIDC_ISSUER is unset. */
  oidc: OidcConfig | null;
};

export interface OidcConfig {
  issuer: string;
  clientId: string;
  clientSecret: string;
  roleClaim: string;
  roleMap: Record<string, Role>;
  scopes: string;
  name: string;
}

type Env = Record<string, string | undefined>;

function str(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

/** One variable's value: its parser on what is set, else on its default, else null. */
function read(env: Env, v: ConfigVar): unknown {
  const raw = str(env, v.name) ?? v.default;
  return raw === undefined || !v.parse ? null : v.parse(raw, v.name);
}

const byName = new Map<string, ConfigVar>(CONFIG_VARS.map((v) => [v.name, v]));

/** A variable read by name, for the values assembled from several (its parser and default still apply). */
function readNamed<N extends ConfigVarName>(env: Env, name: N): ValueOf<Extract<Var, { name: N }>> {
  return read(env, byName.get(name)!) as ValueOf<Extract<Var, { name: N }>>;
}

/** Every keyed variable, in the list's order, placed at its key. */
function readKeyed(env: Env): Nested {
  const out: Record<string, unknown> = {};
  for (const v of CONFIG_VARS as readonly ConfigVar[]) {
    if (v.key === undefined) continue;
    const [group, field] = v.key.split('.') as [string, string | undefined];
    if (field === undefined) out[group] = read(env, v);
    else ((out[group] ??= {}) as Record<string, unknown>)[field] = read(env, v);
  }
  return out as Nested;
}

/** The rules between variables. */
function checkTogether(c: Nested): void {
  if ((c.tlsCert === null) !== (c.tlsKey === null)) {
    throw new ConfigError(
      c.tlsCert ? 'SVC_TLS_KEY' : 'SVC_TLS_CERT',
      'SVC_TLS_CERT and SVC_TLS_KEY must be set together',
    );
  }
  if (c.proxy.httpPort === c.proxy.httpsPort)
    throw new ConfigError('SVC_PROXY_HTTPS_PORT', 'must differ from SVC_PROXY_HTTP_PORT');
}

/** SVC_OIDC_*: all or nothing; the others are read only once the issuer is set. */
function oidcOf(env: Env): OidcConfig | null {
  const others = ['SVC_OIDC_CLIENT_ID', 'SVC_OIDC_CLIENT_SECRET', 'SVC_OIDC_ROLE_MAP'] as const;
  const issuer = readNamed(env, 'SVC_OIDC_ISSUER');
  if (issuer === null) {
    const stray = others.find((n) => str(env, n) !== undefined);
    if (stray) throw new ConfigError('SVC_OIDC_ISSUER', `is required when ${stray} is set`);
    return null;
  }
  for (const n of others)
    if (str(env, n) === undefined) throw new ConfigError(n, 'is required when SVC_OIDC_ISSUER is set');
  const roleClaim = readNamed(env, 'SVC_OIDC_ROLE_CLAIM');
  const roleMap = readNamed(env, 'SVC_OIDC_ROLE_MAP')!;
  const scopes = readNamed(env, 'SVC_OIDC_SCOPES');
  const nameVar = byName.get('SVC_OIDC_NAME')!;
  const name = nameVar.parse!(str(env, nameVar.name) ?? new URL(issuer).host, nameVar.name) as string;
  return {
    issuer,
    clientId: readNamed(env, 'SVC_OIDC_CLIENT_ID')!,
    clientSecret: readNamed(env, 'SVC_OIDC_CLIENT_SECRET')!,
    roleClaim,
    roleMap,
    scopes,
    name,
  };
}

export function loadConfig(env: Env = process.env): Config {
  const c = readKeyed(env);
  checkTogether(c);
  const controlDomain = c.proxy.controlDomain ?? (c.baseDomain ? `svc.${c.baseDomain}` : null);
  return { ...c, masterKeySource: c.masterKey ? 'env' : null, controlDomain, oidc: oidcOf(env) };
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
