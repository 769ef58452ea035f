import { open } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * The host agent's snapshot: written as root by runtime/security-agent.ts, read by the API.
 * Everything the API learns about the host's firewall and fail2ban comes from this file,
 * so the request path never runs a host command.
 */
export const SNAPSHOT_VERSION = 1;
export const SNAPSHOT_FILE = 'host-snapshot.json';
export const DEFAULT_SECURITY_DIR = '/var/lib/svc/security';
export const STALE_AFTER_MS = 5 * 60 * 1000;
/** A snapshot bigger than this is refused unread: the agent itself bounds what it writes. */
export const MAX_SNAPSHOT_BYTES = 4 * 1024 * 1024;
export const MAX_RULES = 2000;
export const MAX_RULE_CHARS = 1000;
export const MAX_JAILS = 200;
export const MAX_BANNED_LISTED = 5000;

export const AGENT_OFF_REASON =
  'The host security agent is off, so firewall and fail2ban state are unknown. ' +
  'Turn it on as root with `svc security-agent on` (it only reads, every minute).';

export const FIREWALL_BACKENDS = ['ufw', 'nftables', 'iptables'] as const;
export type FirewallBackend = (typeof FIREWALL_BACKENDS)[number];

export interface FirewallSection {
  backend: FirewallBackend | null;
  installed: boolean;
  active: boolean;
  rules: string[];
  /** Set when the agent could not read the backend (the rest is then best effort). */
  error?: string;
}

export interface Jail {
  name: string;
  currently_banned: number;
  total_banned: number;
  banned_ips: string[];
}

export interface Fail2banSection {
  installed: boolean;
  active: boolean;
  jails: Jail[];
  error?: string;
}

/** What the agent writes. */
export interface HostSnapshot {
  version: typeof SNAPSHOT_VERSION;
  generated_at: string;
  firewall: FirewallSection;
  fail2ban: Fail2banSection;
}

export type Section<T> = { ok: true; value: T } | { ok: false; reason: string };

/** What the API gets: per-section results, so one damaged section does not hide the other. */
export type ParsedSnapshot =
  | {
      ok: true;
      generatedAt: string;
      generatedAtMs: number;
      firewall: Section<FirewallSection>;
      fail2ban: Section<Fail2banSection>;
    }
  | { ok: false; reason: string };

export function snapshotPath(dir: string = DEFAULT_SECURITY_DIR): string {
  return join(dir, SNAPSHOT_FILE);
}

class Bad extends Error {}

function isObj(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
function bool(o: Record<string, unknown>, k: string, at: string): boolean {
  if (typeof o[k] !== 'boolean') throw new Bad(`${at}.${k} is not a boolean`);
  return o[k] as boolean;
}
function count(o: Record<string, unknown>, k: string, at: string): number {
  const v = o[k];
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw new Bad(`${at}.${k} is not a count`);
  return v;
}
function strings(o: Record<string, unknown>, k: string, at: string, max: number, maxChars: number): string[] {
  const v = o[k];
  if (!Array.isArray(v)) throw new Bad(`${at}.${k} is not a list`);
  if (v.length > max) throw new Bad(`${at}.${k} has more than ${max} entries`);
  return v.map((s, i) => {
    if (typeof s !== 'string' || s.length > maxChars) throw new Bad(`${at}.${k}[${i}] is not a short string`);
    return s;
  });
}
function optError(o: Record<string, unknown>, at: string): { error?: string } {
  if (o.error === undefined || o.error === null) return {};
  if (typeof o.error !== 'string') throw new Bad(`${at}.error is not a string`);
  return { error: o.error.slice(0, 500) };
}

function section<T>(raw: unknown, name: string, read: (o: Record<string, unknown>) => T): Section<T> {
  try {
    if (!isObj(raw)) throw new Bad(`${name} section is missing`);
    return { ok: true, value: read(raw) };
  } catch (e) {
    if (e instanceof Bad) return { ok: false, reason: `snapshot is malformed: ${e.message}` };
    return { ok: false, reason: 'snapshot is malformed' };
  }
}

function readFirewall(o: Record<string, unknown>): FirewallSection {
  const b = o.backend;
  if (b !== null && b !== 'ufw' && b !== 'nftables' && b !== 'iptables')
    throw new Bad('firewall.backend is not a known backend');
  return {
    backend: b,
    installed: bool(o, 'installed', 'firewall'),
    active: bool(o, 'active', 'firewall'),
    rules: strings(o, 'rules', 'firewall', MAX_RULES, MAX_RULE_CHARS),
    ...optError(o, 'firewall'),
  };
}

function readFail2ban(o: Record<string, unknown>): Fail2banSection {
  const jails = o.jails;
  if (!Array.isArray(jails)) throw new Bad('fail2ban.jails is not a list');
  if (jails.length > MAX_JAILS) throw new Bad(`fail2ban.jails has more than ${MAX_JAILS} entries`);
  return {
    installed: bool(o, 'installed', 'fail2ban'),
    active: bool(o, 'active', 'fail2ban'),
    jails: jails.map((j, i) => {
      const at = `fail2ban.jails[${i}]`;
      if (!isObj(j)) throw new Bad(`${at} is not an object`);
      if (typeof j.name !== 'string' || j.name.length === 0 || j.name.length > 200)
        throw new Bad(`${at}.name is not a name`);
      return {
        name: j.name,
        currently_banned: count(j, 'currently_banned', at),
        total_banned: count(j, 'total_banned', at),
        banned_ips: strings(j, 'banned_ips', at, MAX_BANNED_LISTED, 100),
      };
    }),
    ...optError(o, 'fail2ban'),
  };
}

/** Never throws: garbage, truncation, binary and wrong types all become `{ok:false, reason}`. */
export function parseHostSnapshot(input: string | Buffer): ParsedSnapshot {
  if (input.length > MAX_SNAPSHOT_BYTES) return { ok: false, reason: 'snapshot is too large' };
  let raw: unknown;
  try {
    raw = JSON.parse(typeof input === 'string' ? input : input.toString('utf8'));
  } catch {
    return { ok: false, reason: 'snapshot is not valid JSON (truncated or corrupt)' };
  }
  if (!isObj(raw)) return { ok: false, reason: 'snapshot is not a JSON object' };
  if (raw.version !== SNAPSHOT_VERSION)
    return { ok: false, reason: `snapshot version is not ${SNAPSHOT_VERSION}` };
  const g = raw.generated_at;
  const ms = typeof g === 'string' && g.length <= 40 ? Date.parse(g) : NaN;
  if (!Number.isFinite(ms)) return { ok: false, reason: 'snapshot has no valid generated_at' };
  return {
    ok: true,
    generatedAt: new Date(ms).toISOString(),
    generatedAtMs: ms,
    firewall: section(raw.firewall, 'firewall', readFirewall),
    fail2ban: section(raw.fail2ban, 'fail2ban', readFail2ban),
  };
}

/** Reads and parses `<dir>/host-snapshot.json`; a missing or unreadable file is `{ok:false}`. */
export async function readHostSnapshot(dir: string = DEFAULT_SECURITY_DIR): Promise<ParsedSnapshot> {
  let fh;
  try {
    fh = await open(snapshotPath(dir), 'r');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') {
      return {
        ok: false,
        reason:
          'no snapshot from the host security agent yet (it runs every minute; see `svc security-agent status`)',
      };
    }
    return { ok: false, reason: `the host security agent's snapshot cannot be read (${code ?? 'error'})` };
  }
  try {
    const st = await fh.stat();
    if (!st.isFile()) return { ok: false, reason: 'snapshot is not a regular file' };
    if (st.size > MAX_SNAPSHOT_BYTES) return { ok: false, reason: 'snapshot is too large' };
    const buf = Buffer.alloc(st.size);
    let off = 0;
    while (off < buf.length) {
      const { bytesRead } = await fh.read(buf, off, buf.length - off, off);
      if (bytesRead === 0) break;
      off += bytesRead;
    }
    return parseHostSnapshot(buf.subarray(0, off));
  } catch (e) {
    return {
      ok: false,
      reason: `the host security agent's snapshot cannot be read (${(e as NodeJS.ErrnoException).code ?? 'error'})`,
    };
  } finally {
    await fh.close().catch(() => {});
  }
}

/** Older than five minutes, or dated in the future beyond the same margin (clock trouble). */
export function isStale(generatedAtMs: number, now: number = Date.now()): boolean {
  return Math.abs(now - generatedAtMs) > STALE_AFTER_MS;
}

export type Unavailable = { available: false; reason: string };

export type FirewallState =
  | {
      available: true;
      stale: boolean;
      generated_at: string;
      backend: FirewallBackend | null;
      active: boolean;
      rules: string[];
    }
  | Unavailable;

export type Fail2banState =
  { available: true; stale: boolean; generated_at: string; jails: Jail[] } | Unavailable;

export interface StateOptions {
  /** SVC_SECURITY_AGENT: without it a leftover snapshot is not trusted. */
  agentEnabled: boolean;
  now?: number;
}

/** Body of GET /api/security/firewall. */
export function firewallState(snap: ParsedSnapshot | null, opts: StateOptions): FirewallState {
  if (!opts.agentEnabled) return { available: false, reason: AGENT_OFF_REASON };
  if (snap === null || !snap.ok)
    return { available: false, reason: snap?.reason ?? 'no snapshot from the host security agent yet' };
  if (!snap.firewall.ok) return { available: false, reason: snap.firewall.reason };
  const f = snap.firewall.value;
  return {
    available: true,
    stale: isStale(snap.generatedAtMs, opts.now),
    generated_at: snap.generatedAt,
    backend: f.backend,
    active: f.active,
    rules: f.rules,
  };
}

/** Body of GET /api/security/fail2ban. */
export function fail2banState(snap: ParsedSnapshot | null, opts: StateOptions): Fail2banState {
  if (!opts.agentEnabled) return { available: false, reason: AGENT_OFF_REASON };
  if (snap === null || !snap.ok)
    return { available: false, reason: snap?.reason ?? 'no snapshot from the host security agent yet' };
  if (!snap.fail2ban.ok) return { available: false, reason: snap.fail2ban.reason };
  return {
    available: true,
    stale: isStale(snap.generatedAtMs, opts.now),
    generated_at: snap.generatedAt,
    jails: snap.fail2ban.value.jails,
  };
}
