// `svc security-agent on|off|status` and `svc security-check [--undo|--show]`.
// Every host path hangs off `root` (default "/"), so tests run the whole thing in a temp dir.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { access, chmod, chown, constants, mkdir, readFile, rm, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeFileAtomic as writeAtomic } from '#lib/util/files.js';
import { postureSummary, formatPostureTable } from '#lib/security/format.js';
import type { PostureInput, PostureItem } from '#lib/security/posture.js';
import { evaluatePosture } from '#lib/security/posture.js';
import { readOptOut, writeOptOut, optOutPath } from '#lib/security/opt-out.js';
import { postureInputFrom } from '#lib/security/live.js';
import { chooseMasterKey } from '#lib/crypto/master-key.js';
import { createEngine } from '#lib/docker/engine.js';
import type { Config } from '#lib/config.js';
import { DEFAULT_SECURITY_DIR, isStale, readHostSnapshot, snapshotPath } from '#lib/security/snapshot.js';

export interface CliIo {
  out(line: string): void;
  err(line: string): void;
}

export interface CmdResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export type CmdRunner = (cmd: string, args: readonly string[]) => Promise<CmdResult>;

export interface SecurityCliOptions {
  /** Prefix for every host path (/etc, /run, /var/lib); "/" on a real host. */
  root?: string;
  /** The service's environment file; default $SVC_ENV_FILE or /etc/svc/svc.env (under root). */
  envFile?: string;
  /** Where the agent writes; default $SVC_SECURITY_DIR or /var/lib/svc/security (under root). */
  securityDir?: string;
  /** Where `svc security-check` records the opt-out; default $SVC_DATA_DIR or ./data. */
  dataDir?: string;
  /** Passed to the agent as --fail2ban-socket; default $SVC_FAIL2BAN_SOCKET. */
  fail2banSocket?: string;
  nodePath?: string;
  agentScript?: string;
  /** Runs systemctl and the agent's first run; tests inject a recorder. */
  run?: CmdRunner;
  /** Skip the "must be root" check (tests writing under a temp root). */
  allowNonRoot?: boolean;
  env?: NodeJS.ProcessEnv;
  now?: () => number;
}

export const SERVICE_UNIT = 'svc-security-agent.service';
export const TIMER_UNIT = 'svc-security-agent.timer';
/** Files in /etc/cron.d are ignored by cron when their name has a dot. */
export const CRON_FILE = 'svc-security-agent';
export { DEFAULT_ENV_FILE } from './host-config.js';
import { DEFAULT_ENV_FILE } from './host-config.js';

const defaultRunner: CmdRunner = (cmd, args) =>
  new Promise((done) => {
    execFile(cmd, [...args], { timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (err as NodeJS.ErrnoException).code : 0;
      done({
        code: typeof code === 'number' ? code : err ? null : 0,
        stdout: String(stdout),
        stderr: String(stderr) || (err?.message ?? ''),
      });
    });
  });

interface Paths {
  root: string;
  envFile: string;
  securityDir: string;
  dataDir: string;
  systemdDir: string;
  systemdRunning: string;
  cronFile: string;
  node: string;
  agent: string;
  fail2banSocket?: string;
}

function under(root: string, p: string): string {
  return root === '/' ? p : join(root, p);
}

function paths(o: SecurityCliOptions): Paths {
  const env = o.env ?? process.env;
  const root = o.root ?? '/';
  return {
    root,
    envFile: o.envFile ?? under(root, env.SVC_ENV_FILE || DEFAULT_ENV_FILE),
    securityDir: o.securityDir ?? under(root, env.SVC_SECURITY_DIR || DEFAULT_SECURITY_DIR),
    dataDir: o.dataDir ?? resolve(env.SVC_DATA_DIR || './data'),
    systemdDir: under(root, '/etc/systemd/system'),
    systemdRunning: under(root, '/run/systemd/system'),
    cronFile: under(root, join('/etc/cron.d', CRON_FILE)),
    node: o.nodePath ?? process.execPath,
    agent: o.agentScript ?? fileURLToPath(new URL('./security-agent.js', import.meta.url)),
    fail2banSocket: o.fail2banSocket ?? (env.SVC_FAIL2BAN_SOCKET || undefined),
  };
}

/**
 * Paths end up in a unit's ExecStart and a cron line (which cron hands to /bin/sh), so only
 * plain path characters are accepted: nothing there can be read as quoting or a metacharacter.
 */
const SAFE_PATH = /^\/[A-Za-z0-9._/@+-]*$/;

function agentCommand(p: Paths): string[] {
  const parts = [p.node, p.agent, '--out', p.securityDir];
  if (p.fail2banSocket) parts.push('--fail2ban-socket', p.fail2banSocket);
  for (const x of [p.node, p.agent, p.securityDir, p.fail2banSocket]) {
    if (x !== undefined && !SAFE_PATH.test(x))
      throw new Error(`refusing a path with unusual characters: ${JSON.stringify(x)}`);
  }
  return parts;
}

export function serviceUnitText(cmd: readonly string[]): string {
  return [
    '# Installed by `svc security-agent on`. Read-only: it never changes a firewall rule or a ban.',
    '[Unit]',
    'Description=svc host security agent (firewall and fail2ban snapshot)',
    'After=network.target',
    '',
    '[Service]',
    'Type=oneshot',
    `ExecStart=${cmd.join(' ')}`,
    'Nice=10',
    'NoNewPrivileges=yes',
    'PrivateTmp=yes',
    'ProtectSystem=full',
    'ProtectHome=read-only',
    'TimeoutStartSec=120',
    '',
  ].join('\n');
}

export function timerUnitText(): string {
  return [
    '# Installed by `svc security-agent on`.',
    '[Unit]',
    'Description=Run the svc host security agent every minute',
    '',
    '[Timer]',
    'OnCalendar=*:*:00',
    'AccuracySec=5s',
    `Unit=${SERVICE_UNIT}`,
    '',
    '[Install]',
    'WantedBy=timers.target',
    '',
  ].join('\n');
}

export function cronText(cmd: readonly string[]): string {
  return [
    '# Installed by `svc security-agent on`: the read-only host security agent, every minute.',
    'SHELL=/bin/sh',
    'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    `* * * * * root ${cmd.join(' ')} >/dev/null 2>&1`,
    '',
  ].join('\n');
}

/**
 * Sets `KEY=value` in an environment file, touching only that line: comments, order, other
 * values (quotes and all) and the file's mode and owner are kept. Missing file: created 0600.
 */
export async function setEnvFileValue(path: string, key: string, value: string): Promise<void> {
  let text = '';
  let mode = 0o600;
  let owner: { uid: number; gid: number } | null = null;
  try {
    text = await readFile(path, 'utf8');
    const st = await stat(path);
    mode = st.mode & 0o777;
    owner = { uid: st.uid, gid: st.gid };
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  const line = `${key}=${value}`;
  const pattern = new RegExp(`^\\s*(?:export\\s+)?${key}\\s*=`);
  const lines = text === '' ? [] : text.split('\n');
  const trailing = lines.length > 0 && lines[lines.length - 1] === '';
  if (trailing) lines.pop();
  let found = false;
  const next: string[] = [];
  for (const l of lines) {
    if (pattern.test(l)) {
      if (!found) next.push(line);
      found = true;
    } else next.push(l);
  }
  if (!found) next.push(line);
  await writeAtomic(path, next.join('\n') + '\n', mode);
  if (owner && (process.getuid?.() ?? 1) === 0) await chown(path, owner.uid, owner.gid).catch(() => {});
}

export async function readEnvFileValue(path: string, key: string): Promise<string | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    return undefined;
  }
  const pattern = new RegExp(`^\\s*(?:export\\s+)?${key}\\s*=\\s*(.*)$`);
  let value: string | undefined;
  for (const l of text.split('\n')) {
    const m = pattern.exec(l);
    if (m) value = m[1].trim().replace(/^(['"])(.*)\1$/, '$2');
  }
  return value;
}

function needRoot(io: CliIo, o: SecurityCliOptions): boolean {
  if (o.allowNonRoot || (o.root ?? '/') !== '/' || (process.getuid?.() ?? 0) === 0) return true;
  io.err(
    'svc security-agent on/off must run as root (it installs a system timer that runs the agent as root).',
  );
  return false;
}

async function agentOn(io: CliIo, o: SecurityCliOptions, p: Paths, run: CmdRunner): Promise<number> {
  const cmd = agentCommand(p);
  await mkdir(p.securityDir, { recursive: true, mode: 0o755 });
  await chmod(p.securityDir, 0o755);
  if (existsSync(p.systemdRunning)) {
    await writeAtomic(join(p.systemdDir, SERVICE_UNIT), serviceUnitText(cmd), 0o644);
    await writeAtomic(join(p.systemdDir, TIMER_UNIT), timerUnitText(), 0o644);
    for (const args of [['daemon-reload'], ['enable', '--now', TIMER_UNIT], ['start', SERVICE_UNIT]]) {
      const r = await run('systemctl', args);
      if (r.code !== 0) {
        io.err(`systemctl ${args.join(' ')} failed: ${(r.stderr || r.stdout).trim()}`);
        return 1;
      }
    }
    io.out(`Installed ${TIMER_UNIT} (every minute) running ${SERVICE_UNIT} as root.`);
  } else {
    await writeAtomic(p.cronFile, cronText(cmd), 0o644);
    io.out(`systemd is not running: installed ${p.cronFile} (every minute, as root).`);
    const r = await run(cmd[0], cmd.slice(1));
    if (r.code === 0) io.out(`First snapshot written to ${snapshotPath(p.securityDir)}.`);
    else
      io.err(`The agent's first run failed (cron will retry every minute): ${(r.stderr || r.stdout).trim()}`);
  }
  await setEnvFileValue(p.envFile, 'SVC_SECURITY_AGENT', 'true');
  io.out(`Set SVC_SECURITY_AGENT=true in ${p.envFile}; restart svc to apply.`);
  return 0;
}

async function agentOff(io: CliIo, o: SecurityCliOptions, p: Paths, run: CmdRunner): Promise<number> {
  const unitPath = join(p.systemdDir, TIMER_UNIT);
  if (existsSync(p.systemdRunning) && existsSync(unitPath)) {
    const r = await run('systemctl', ['disable', '--now', TIMER_UNIT]);
    if (r.code !== 0)
      io.err(`systemctl disable --now ${TIMER_UNIT} failed: ${(r.stderr || r.stdout).trim()}`);
  }
  const removed: string[] = [];
  for (const f of [unitPath, join(p.systemdDir, SERVICE_UNIT), p.cronFile]) {
    if (existsSync(f)) {
      await rm(f, { force: true });
      removed.push(f);
    }
  }
  if (existsSync(p.systemdRunning) && removed.some((f) => f.startsWith(p.systemdDir)))
    await run('systemctl', ['daemon-reload']);
  // A leftover snapshot would only go stale; the API ignores it once the agent is off anyway.
  await rm(snapshotPath(p.securityDir), { force: true });
  await setEnvFileValue(p.envFile, 'SVC_SECURITY_AGENT', 'false');
  io.out(removed.length ? `Removed ${removed.join(', ')}.` : 'No agent timer or cron entry was installed.');
  io.out(`Set SVC_SECURITY_AGENT=false in ${p.envFile}; restart svc to apply.`);
  return 0;
}

function age(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  return `${Math.round(s / 3600)} h`;
}

async function agentStatus(io: CliIo, o: SecurityCliOptions, p: Paths, run: CmdRunner): Promise<number> {
  const systemd = existsSync(p.systemdRunning);
  const timer = existsSync(join(p.systemdDir, TIMER_UNIT));
  const cron = existsSync(p.cronFile);
  let schedule = 'not installed';
  if (timer) {
    const r = systemd ? await run('systemctl', ['is-active', TIMER_UNIT]) : null;
    schedule = `systemd timer ${TIMER_UNIT}${r ? ` (${r.stdout.trim() || 'unknown'})` : ''}`;
  }
  if (cron) schedule = timer ? `${schedule}, and cron ${p.cronFile}` : `cron ${p.cronFile}`;
  io.out(`Schedule:   ${schedule}`);
  const v = await readEnvFileValue(p.envFile, 'SVC_SECURITY_AGENT');
  io.out(`Setting:    SVC_SECURITY_AGENT=${v ?? '(unset)'} in ${p.envFile}`);
  const snap = await readHostSnapshot(p.securityDir);
  if (!snap.ok) {
    io.out(`Snapshot:   unavailable: ${snap.reason}`);
    return 0;
  }
  const now = (o.now ?? Date.now)();
  io.out(
    `Snapshot:   ${snapshotPath(p.securityDir)}, written ${age(now - snap.generatedAtMs)} ago${isStale(snap.generatedAtMs, now) ? ' (STALE)' : ''}`,
  );
  if (snap.firewall.ok) {
    const f = snap.firewall.value;
    io.out(
      `Firewall:   ${f.backend ?? 'none detected'}${f.backend ? (f.active ? ', active' : ', INACTIVE') : ''}, ${f.rules.length} rules`,
    );
  } else io.out(`Firewall:   unavailable: ${snap.firewall.reason}`);
  if (snap.fail2ban.ok) {
    const f = snap.fail2ban.value;
    const banned = f.jails.reduce((s, j) => s + j.currently_banned, 0);
    io.out(
      `fail2ban:   ${!f.installed ? 'not installed' : !f.active ? 'NOT RUNNING' : `${f.jails.length} jails, ${banned} banned now`}`,
    );
  } else io.out(`fail2ban:   unavailable: ${snap.fail2ban.reason}`);
  return 0;
}

export const AGENT_ACTIONS = ['on', 'off', 'status'] as const;
export type AgentAction = (typeof AGENT_ACTIONS)[number];

/** `svc security-agent on|off|status`; resolves to the process exit code. */
export async function securityAgent(
  sub: AgentAction,
  io: CliIo,
  options: SecurityCliOptions = {},
): Promise<number> {
  const run = options.run ?? defaultRunner;
  try {
    const p = paths(options);
    if (sub === 'on') return needRoot(io, options) ? await agentOn(io, options, p, run) : 1;
    if (sub === 'off') return needRoot(io, options) ? await agentOff(io, options, p, run) : 1;
    return await agentStatus(io, options, p, run);
  } catch (e) {
    io.err(`svc security-agent ${sub}: ${e instanceof Error ? e.message : String(e)}`);
    return 1;
  }
}

export type PostureProvider = () => { items: PostureItem[] } | Promise<{ items: PostureItem[] }>;

/**
 * `svc security-check`: records the operator's opt-out of the firewall/fail2ban expectation
 * (`--undo` removes it, `--show` changes nothing), then prints the posture checklist.
 */
export async function securityCheck(
  mode: 'record' | 'undo' | 'show',
  io: CliIo,
  postureProvider: PostureProvider,
  options: SecurityCliOptions = {},
): Promise<number> {
  const p = paths(options);
  try {
    if (mode === 'undo') {
      writeOptOut(p.dataDir, false);
      io.out('Firewall and fail2ban are expected again (opt-out removed).');
    } else if (mode === 'record') {
      writeOptOut(p.dataDir, true);
      io.out(
        `Recorded: firewall and fail2ban checks disabled by operator (${optOutPath(p.dataDir)}). Undo with \`svc security-check --undo\`.`,
      );
    } else {
      io.out(`Opt-out: ${readOptOut(p.dataDir) ? 'recorded' : 'not recorded'}.`);
    }
    const { items } = await postureProvider();
    io.out('');
    for (const line of formatPostureTable(items)) io.out(line);
    io.out('');
    io.out(postureSummary(items));
    return 0;
  } catch (e) {
    io.err(`svc security-check: ${e instanceof Error ? e.message : String(e)}`);
    return 1;
  }
}

/** What the service's tailer would find: the access log readable or not (the CLI reads no lines). */
async function probeAccessLog(path: string): Promise<NonNullable<PostureInput['tailer']>> {
  try {
    await access(path, constants.R_OK);
    const st = await stat(path);
    return { reading: true, probed: true, path, lines: 0, lastLineAt: st.mtime.toISOString() };
  } catch (e) {
    return {
      reading: false,
      path,
      lines: 0,
      lastLineAt: null,
      error: (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (e as Error).message,
    };
  }
}

/**
 * The checklist from the service's own configuration and files, without opening its database
 * (nothing is created or migrated) and with the master key resolved as the service resolves it.
 */
export async function cliPosture(cfg: Config): Promise<{ items: PostureItem[] }> {
  const key = chooseMasterKey(cfg.dataDir, cfg.masterKey, { generate: false, hasSealedData: false });
  const config: Config = { ...cfg, masterKey: key.key, masterKeySource: key.source };
  const input = await postureInputFrom({
    config,
    engine: createEngine({ socketPath: cfg.dockerSocket }),
    tailerStatus: cfg.security.monitor ? await probeAccessLog(cfg.accessLog) : null,
    monitorEnabled: cfg.security.monitor,
    now: Date.now(),
  });
  return evaluatePosture(input);
}
