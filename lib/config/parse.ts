// The parsers of configuration values (lib/config/vars.ts names which variable uses which). Each
// takes the trimmed value as written and the variable's name, and throws a ConfigError naming it.
import { isIP } from 'node:net';
import { readFileSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';
import { posix, resolve } from 'node:path';
import { checkHostname } from '../util/hostname.js';
import { ROLES, isRole, type Role } from '../util/role-names.js';

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`);
  }
}

/** A parser: the value as written (trimmed, never blank) and the variable's name. */
export type Parse<T> = (raw: string, name: string) => T;

export const text: Parse<string> = (raw) => raw;

/** A path, made absolute against the working directory. */
export const absolutePath: Parse<string> = (raw) => resolve(raw);

export function int(min: number, max: number): Parse<number> {
  return (raw, name) => {
    if (!/^-?\d+$/.test(raw)) throw new ConfigError(name, `must be a whole number, got "${raw}"`);
    const n = Number(raw);
    if (n < min || n > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${n}`);
    return n;
  };
}

export const port = int(1, 65535);

export const bool: Parse<boolean> = (raw, name) => {
  const v = raw.toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(v)) return true;
  if (['0', 'false', 'no', 'off'].includes(v)) return false;
  throw new ConfigError(name, `must be true or false, got "${raw}"`);
};

/** One of two words (`must be "a" or "b"`). */
export function either<const A extends string, const B extends string>(a: A, b: B): Parse<A | B> {
  return (raw, name) => {
    if (raw !== a && raw !== b) throw new ConfigError(name, `must be "${a}" or "${b}", got "${raw}"`);
    return raw as A | B;
  };
}

/** The entries of a comma list, trimmed, empty ones dropped. */
const commaList = (raw: string): string[] =>
  raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** A comma list of IPs or CIDRs; each entry is checked now so a typo cannot silently trust nobody. */
export const addressList: Parse<string[]> = (raw, name) => {
  const items = commaList(raw);
  for (const item of items) {
    const [addr, bits, extra] = item.split('/');
    const family = isIP(addr ?? '');
    const okBits = bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= (family === 6 ? 128 : 32));
    if (!family || !okBits || extra !== undefined)
      throw new ConfigError(name, `"${item}" is not an IP address or CIDR`);
  }
  return items;
};

export const ipList: Parse<string[]> = (raw, name) => {
  const items = commaList(raw);
  if (items.length === 0) throw new ConfigError(name, 'must list at least one IP address');
  for (const ip of items) if (!isIP(ip)) throw new ConfigError(name, `"${ip}" is not an IP address`);
  return items.map((ip) => (isIP(ip) === 6 ? ip.toLowerCase() : ip));
};

export const bindAddress: Parse<string> = (raw, name) => {
  if (!isIP(raw) && raw !== 'localhost') throw new ConfigError(name, `"${raw}" is not an IP address`);
  return raw;
};

export const hostname: Parse<string> = (raw, name) => {
  const r = checkHostname(raw);
  if (!r.ok) throw new ConfigError(name, r.message);
  return r.hostname;
};

export const masterKey: Parse<Buffer> = (raw, name) => {
  if (!/^[0-9a-fA-F]{64}$/.test(raw))
    throw new ConfigError(name, 'must be 64 hexadecimal characters (32 bytes)');
  return Buffer.from(raw, 'hex');
};

export const metricsToken: Parse<string> = (raw, name) => {
  if (raw.length < 16) throw new ConfigError(name, 'must be at least 16 characters');
  return raw;
};

export const logLevel: Parse<string> = (raw, name) => {
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(raw))
    throw new ConfigError(name, `unknown level "${raw}"`);
  return raw;
};

export const databaseUrl: Parse<string> = (raw, name) => {
  if (!/^postgres(ql)?:\/\/[^\s]+$/i.test(raw))
    throw new ConfigError(name, 'must be a postgres:// (or postgresql://) URL');
  return raw;
};

export const acmeDirectory: Parse<string> = (raw, name) => {
  try {
    if (new URL(raw).protocol !== 'https:') throw new Error();
  } catch {
    throw new ConfigError(name, `must be the https:// URL of an ACME directory, got "${raw}"`);
  }
  return raw;
};

export const email: Parse<string> = (raw, name) => {
  if (!/^[^\s@<>()[\],;:"]+@[^\s@<>()[\],;:"]+\.[^\s@<>()[\],;:"]+$/.test(raw))
    throw new ConfigError(name, `"${raw}" is not an email address`);
  return raw;
};

/** An absolute http(s) URL with a host, optionally a path prefix; no credentials, query or fragment. */
export const publicUrl: Parse<string> = (raw, name) => {
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
};

const IMAGE_REF = /^[a-z0-9][a-z0-9._\/:@-]{0,254}$/i;

export const imageMap: Parse<Record<string, string>> = (raw, name) => {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ConfigError(name, 'is not JSON (expected an object from image reference to image reference)');
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new ConfigError(name, 'must be a JSON object');
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(parsed as Record<string, unknown>)) {
    if (!IMAGE_REF.test(k) || typeof v !== 'string' || !IMAGE_REF.test(v))
      throw new ConfigError(
        name,
        `entry "${k.slice(0, 80)}" is not an image reference mapped to an image reference`,
      );
    out[k] = v;
  }
  return out;
};

/** `host[:port]` of a registry, the form engines use in image references (no scheme, no path). */
export const registryHost: Parse<string> = (raw, name) => {
  const m = /^([a-z0-9]([a-z0-9.-]{0,252}[a-z0-9])?|\[[0-9a-f:.]+\])(:(\d{1,5}))?$/i.exec(raw);
  if (!m || (m[4] !== undefined && (Number(m[4]) < 1 || Number(m[4]) > 65535)))
    throw new ConfigError(name, `must be a registry's host[:port] (no scheme, no path), got "${raw}"`);
  return raw.toLowerCase();
};

/** An http:// origin (scheme, host, port; no path) or a unix socket: Caddy's admin endpoint. */
export const adminOrigin: Parse<string> = (raw, name) => {
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
};

/** `ip` or `ip:port` (`[v6]:port`), normalised to what node:dns's setServers takes. */
export const resolverAddress: Parse<string> = (raw, name) => {
  if (isIP(raw)) return raw;
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|(\d{1,3}(?:\.\d{1,3}){3})):(\d{1,5})$/.exec(raw);
  const host = m?.[1] ?? m?.[2];
  const p = Number(m?.[3]);
  if (!m || !host || !isIP(host) || !(p >= 1 && p <= 65535))
    throw new ConfigError(name, `"${raw}" is not an IP address or ip:port`);
  return isIP(host) === 6 ? `[${host}]:${p}` : `${host}:${p}`;
};

/** A PEM file that must exist and hold a certificate now, not when Caddy first needs it. */
export const pemFile: Parse<string> = (raw, name) => {
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
};

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/** The provider's issuer URL, kept as written: discovery compares it character for character. */
export const oidcIssuer: Parse<string> = (raw, name) => {
  let issuer: URL;
  try {
    issuer = new URL(raw);
  } catch {
    throw new ConfigError(name, `"${raw}" is not a URL (like https://id.example.com/realms/ops)`);
  }
  // Plain http only to a provider on this host (a test or a sidecar): anywhere else the token exchange would travel in clear.
  if (issuer.protocol !== 'https:' && !(issuer.protocol === 'http:' && LOOPBACK_HOSTS.has(issuer.hostname))) {
    throw new ConfigError(name, 'must be an https:// URL (http:// only on loopback)');
  }
  if (issuer.username || issuer.password || issuer.search || issuer.hash)
    throw new ConfigError(name, 'must not carry credentials, a query or a fragment');
  return raw;
};

export const claimName: Parse<string> = (raw, name) => {
  if (!/^[A-Za-z0-9_.:/-]{1,128}$/.test(raw))
    throw new ConfigError(name, `"${raw.slice(0, 80)}" is not a claim name`);
  return raw;
};

/** Checked now: a typo in a role name would otherwise surface as every person being refused at sign-in. */
export const roleMap: Parse<Record<string, Role>> = (raw, name) => {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ConfigError(
      name,
      'is not JSON (expected an object from a claim value to a role, like {"ops-admins":"admin"})',
    );
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new ConfigError(name, 'must be a JSON object from a claim value to a role');
  const map: Record<string, Role> = Object.create(null);
  for (const [value, role] of Object.entries(parsed as Record<string, unknown>)) {
    if (!isRole(role))
      throw new ConfigError(
        name,
        `"${value.slice(0, 80)}" maps to ${JSON.stringify(role)}, not one of ${ROLES.join(', ')}`,
      );
    map[value] = role;
  }
  if (Object.keys(map).length === 0) throw new ConfigError(name, 'maps nothing: nobody could sign in');
  return map;
};

export const scopes: Parse<string> = (raw, name) => {
  if (!raw.split(/\s+/).includes('openid') || !/^[\x21\x23-\x5b\x5d-\x7e ]+$/.test(raw)) {
    throw new ConfigError(name, 'must be a space-separated list of scopes that includes openid');
  }
  return raw;
};

export const buttonName: Parse<string> = (raw, name) => {
  if (raw.length > 64) throw new ConfigError(name, 'must be at most 64 characters');
  return raw;
};
