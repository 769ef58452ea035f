// What the host agent reads and how it reads it. The parsers are pure (fixtures test them);
// `collectHostSnapshot` takes the command runner first, so the runtime program supplies the
// real execFile and tests can point it at a private fail2ban socket or a network namespace.
import {
  MAX_BANNED_LISTED,
  MAX_JAILS,
  MAX_RULES,
  MAX_RULE_CHARS,
  SNAPSHOT_VERSION,
  type Fail2banSection,
  type FirewallSection,
  type HostSnapshot,
  type Jail,
} from './snapshot.js';

export interface RunResult {
  /** Exit code; null when the program could not be started or was killed. */
  code: number | null;
  stdout: string;
  stderr: string;
  /** The program is not installed. */
  missing: boolean;
}

/** Runs a program with an argument array (never a shell string). */
export type Runner = (cmd: string, args: readonly string[]) => Promise<RunResult>;

function clip(rule: string): string {
  return rule.length > MAX_RULE_CHARS ? `${rule.slice(0, MAX_RULE_CHARS - 1)}…` : rule;
}

function firstLine(r: RunResult): string {
  let text = (r.stderr.trim() || r.stdout.trim()).split('\n')[0] ?? '';
  // fail2ban prefixes its messages with a log header ("2024-01-01 ... fail2ban [123]: ERROR   ").
  const m = /\b(?:ERROR|WARNING|CRITICAL)\s+(.*)$/.exec(text);
  if (m) text = m[1];
  return text.slice(0, 300) || `exit code ${r.code}`;
}

export interface UfwStatus {
  active: boolean;
  rules: string[];
}

/** `ufw status verbose`: "Status: active", the defaults line, then the rule table. */
export function parseUfwStatus(text: string): UfwStatus | null {
  const lines = text.split('\n');
  const status = lines.find((l) => l.startsWith('Status:'));
  if (!status) return null;
  const active = status.slice(7).trim() === 'active';
  const rules: string[] = [];
  const defaults = lines.find((l) => l.startsWith('Default:'));
  if (defaults) rules.push(defaults.trim());
  const sep = lines.findIndex((l) => /^--\s+-+/.test(l));
  if (sep !== -1) {
    for (const l of lines.slice(sep + 1)) {
      const t = l.trim().replace(/\s{2,}/g, '  ');
      if (t) rules.push(clip(t));
    }
  }
  return { active, rules: rules.slice(0, MAX_RULES) };
}

export interface NftRuleset {
  /** Some input-hook chain drops by policy or holds a rule, in a table nft itself manages. */
  nativeInputFiltering: boolean;
  /** The same, counting tables managed by iptables-nft. */
  anyInputFiltering: boolean;
  nativeTables: number;
  /** "family table chain: rule" for tables nft manages itself. */
  rules: string[];
}

const IPTABLES_TABLES = new Set(['filter', 'nat', 'mangle', 'raw', 'security']);
const IPTABLES_CHAINS = new Set(['INPUT', 'FORWARD', 'OUTPUT', 'PREROUTING', 'POSTROUTING']);

interface NftTable {
  family: string;
  name: string;
  chains: Array<{ name: string; input: boolean; drop: boolean; rules: string[] }>;
}

/**
 * `nft list ruleset` (text). Tables that iptables-nft manages belong to the iptables view:
 * nft announces some with a "# Warning: table ip nat is managed by iptables-nft" comment, and
 * the others are recognisable by iptables' table and built-in chain names.
 */
export function parseNftRuleset(text: string): NftRuleset {
  const announced = new Set<string>();
  for (const m of text.matchAll(/^# Warning: table (\S+) (\S+) is managed by iptables-nft/gm))
    announced.add(`${m[1]} ${m[2]}`);
  const tables: NftTable[] = [];
  let depth = 0;
  let table: NftTable | null = null;
  let chain: NftTable['chains'][number] | null = null;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    if (depth === 0) {
      const m = /^table\s+(\S+)\s+(\S+)\s*\{/.exec(line);
      table = m ? { family: m[1], name: m[2], chains: [] } : null;
      if (table) tables.push(table);
    } else if (depth === 1) {
      const m = /^chain\s+(\S+)\s*\{/.exec(line);
      chain = m && table ? { name: m[1], input: false, drop: false, rules: [] } : null;
      if (chain) table?.chains.push(chain);
    } else if (depth === 2 && chain) {
      if (/^type\s+\S+\s+hook\s+/.test(line)) {
        chain.input = /\bhook\s+input\b/.test(line);
        chain.drop = /\bpolicy\s+drop\b/.test(line);
      } else if (line !== '}' && !/^(policy|comment|devices?)\b/.test(line)) {
        chain.rules.push(line);
      }
    }
    depth += (line.match(/\{/g) ?? []).length - (line.match(/\}/g) ?? []).length;
    if (depth < 0) depth = 0;
    if (depth <= 1) chain = null;
    if (depth === 0) table = null;
  }

  const out: NftRuleset = {
    nativeInputFiltering: false,
    anyInputFiltering: false,
    nativeTables: 0,
    rules: [],
  };
  for (const t of tables) {
    const key = `${t.family} ${t.name}`;
    const iptables =
      announced.has(key) ||
      ((t.family === 'ip' || t.family === 'ip6') &&
        IPTABLES_TABLES.has(t.name) &&
        t.chains.some((c) => IPTABLES_CHAINS.has(c.name)));
    const filtering = t.chains.some((c) => c.input && (c.drop || c.rules.length > 0));
    if (filtering) out.anyInputFiltering = true;
    if (iptables) continue;
    out.nativeTables++;
    if (filtering) out.nativeInputFiltering = true;
    for (const c of t.chains) {
      if (c.input && c.drop) out.rules.push(`${key} ${c.name}: policy drop`);
      for (const r of c.rules) out.rules.push(`${key} ${c.name}: ${r}`);
    }
  }
  out.rules = out.rules.slice(0, MAX_RULES).map(clip);
  return out;
}

export interface IptablesRuleset {
  inputFiltering: boolean;
  rules: string[];
}

/** `iptables-save`: the filter table's INPUT policy and its rules. */
export function parseIptablesSave(text: string): IptablesRuleset {
  let table = '';
  let inputFiltering = false;
  const rules: string[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line.startsWith('*')) table = line.slice(1);
    if (table !== 'filter') continue;
    const pol = /^:INPUT\s+(\S+)/.exec(line);
    if (pol && (pol[1] === 'DROP' || pol[1] === 'REJECT')) {
      inputFiltering = true;
      rules.push(`-P INPUT ${pol[1]}`);
    }
    if (line.startsWith('-A ')) {
      if (line.startsWith('-A INPUT ')) inputFiltering = true;
      if (rules.length < MAX_RULES) rules.push(clip(line));
    }
  }
  return { inputFiltering, rules };
}

/** `fail2ban-client status`: the jail list. */
export function parseFail2banStatus(text: string): string[] | null {
  const m = /Jail list:\s*(.*)$/m.exec(text);
  if (!m) return null;
  return m[1]
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** `fail2ban-client status <jail>`: ban counters and the banned list. */
export function parseFail2banJail(name: string, text: string): Jail | null {
  const num = (label: string): number | null => {
    const m = new RegExp(`${label}:\\s*(\\d+)`).exec(text);
    return m ? Number(m[1]) : null;
  };
  const current = num('Currently banned');
  const total = num('Total banned');
  if (current === null || total === null) return null;
  const list = /Banned IP list:[ \t]*(.*)$/m.exec(text);
  const banned = (list?.[1] ?? '').split(/[\s,]+/).filter((s) => s.length > 0 && s.length <= 100);
  return {
    name,
    currently_banned: current,
    total_banned: total,
    banned_ips: banned.slice(0, MAX_BANNED_LISTED),
  };
}

const JAIL_NAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$/;

export async function collectFirewall(run: Runner): Promise<FirewallSection> {
  const errors: string[] = [];
  let ufwInstalled = false;
  let ufwRules: string[] = [];
  const ufw = await run('ufw', ['status', 'verbose']);
  if (!ufw.missing) {
    ufwInstalled = true;
    const s = ufw.code === 0 ? parseUfwStatus(ufw.stdout) : null;
    if (s?.active) return { backend: 'ufw', installed: true, active: true, rules: s.rules };
    if (s) ufwRules = s.rules;
    else errors.push(`ufw: ${firstLine(ufw)}`);
  }

  let nftInstalled = false;
  let nft: NftRuleset | null = null;
  const n = await run('nft', ['list', 'ruleset']);
  if (!n.missing) {
    nftInstalled = true;
    if (n.code === 0) nft = parseNftRuleset(n.stdout);
    else errors.push(`nft: ${firstLine(n)}`);
  }
  if (nft?.nativeInputFiltering)
    return { backend: 'nftables', installed: true, active: true, rules: nft.rules };

  let iptInstalled = false;
  let ipt: IptablesRuleset | null = null;
  const i = await run('iptables-save', []);
  if (!i.missing) {
    iptInstalled = true;
    if (i.code === 0) ipt = parseIptablesSave(i.stdout);
    else errors.push(`iptables-save: ${firstLine(i)}`);
  }
  if (ipt?.inputFiltering) return { backend: 'iptables', installed: true, active: true, rules: ipt.rules };

  // Nothing filters incoming traffic: name the most specific tool present, inactive.
  const error = errors.length ? { error: errors.join('; ') } : {};
  if (ufwInstalled) return { backend: 'ufw', installed: true, active: false, rules: ufwRules, ...error };
  if (nftInstalled && (nft === null || nft.nativeTables > 0 || !iptInstalled)) {
    return { backend: 'nftables', installed: true, active: false, rules: nft?.rules ?? [], ...error };
  }
  if (iptInstalled)
    return { backend: 'iptables', installed: true, active: false, rules: ipt?.rules ?? [], ...error };
  if (nftInstalled) return { backend: 'nftables', installed: true, active: false, rules: [], ...error };
  return { backend: null, installed: false, active: false, rules: [], ...error };
}

export async function collectFail2ban(run: Runner, socket?: string): Promise<Fail2banSection> {
  const base = socket ? ['-s', socket] : [];
  const s = await run('fail2ban-client', [...base, 'status']);
  if (s.missing) return { installed: false, active: false, jails: [] };
  const names = s.code === 0 ? parseFail2banStatus(s.stdout) : null;
  // "Failed to access socket path ... Is fail2ban running?": installed, not running.
  if (names === null) return { installed: true, active: false, jails: [], error: firstLine(s) };
  const jails: Jail[] = [];
  const errors: string[] = [];
  for (const name of names.slice(0, MAX_JAILS)) {
    if (!JAIL_NAME.test(name)) {
      errors.push(`skipped a jail with an unexpected name`);
      continue;
    }
    const j = await run('fail2ban-client', [...base, 'status', name]);
    const parsed = j.code === 0 ? parseFail2banJail(name, j.stdout) : null;
    if (parsed) jails.push(parsed);
    else errors.push(`${name}: ${firstLine(j)}`);
  }
  return {
    installed: true,
    active: true,
    jails,
    ...(errors.length ? { error: errors.join('; ').slice(0, 500) } : {}),
  };
}

export interface CollectOptions {
  fail2banSocket?: string;
  now?: Date;
}

export async function collectHostSnapshot(run: Runner, opts: CollectOptions = {}): Promise<HostSnapshot> {
  const [firewall, fail2ban] = await Promise.all([
    collectFirewall(run),
    collectFail2ban(run, opts.fail2banSocket),
  ]);
  return {
    version: SNAPSHOT_VERSION,
    generated_at: (opts.now ?? new Date()).toISOString(),
    firewall,
    fail2ban,
  };
}
