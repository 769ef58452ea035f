// What `svc serve` says once it listens: on a terminal, a banner in words (where to open it, the
// setup link while setup is open, where the data and the key are, what is missing and how to get
// it); otherwise the same facts as JSON log lines, for journald and log collectors.
import { join } from 'node:path';
import type { Services } from '#lib/http/handler.js';
import type { Logger } from '#lib/log.js';
import { dialectOf } from '#lib/db/index.js';
import { readSetupToken } from '#lib/auth/setup.js';
import { masterKeyPath } from '#lib/crypto/master-key.js';
import { getBaseDomain } from '#lib/domains/store.js';
import { createCaddyClient } from '#lib/proxy/caddy.js';
import { productVersion } from '#lib/version.js';
import type { BootNotice } from './boot.js';

const PROBE_MS = 2_000;

export interface Missing {
  what: string;
  /** What it costs and what to do, one sentence or two. */
  fix: string;
}

export interface StartFacts {
  url: string;
  version: string;
  startupMs: number;
  dataDir: string;
  database: string;
  /** Where the master key comes from, in words; null: there is none. */
  masterKey: string | null;
  masterKeyGenerated: boolean;
  /** The one-time setup link while setup is open. */
  setupLink: string | null;
  missing: Missing[];
  /** Boot notices the lines above do not already say. */
  notes: string[];
}

function within<T>(p: Promise<T>, fallback: T): Promise<T> {
  return Promise.race([
    p.catch(() => fallback),
    new Promise<T>((r) => setTimeout(() => r(fallback), PROBE_MS).unref()),
  ]);
}

/** The Docker engine, Caddy's admin API and the base domain: each missing one with its fix. */
export async function findMissing(env: Pick<Services, 'engine' | 'config' | 'db'>): Promise<Missing[]> {
  const cfg = env.config;
  const [engine, caddy, base] = await Promise.all([
    within(
      env.engine.docker.ping().then(() => true),
      false,
    ),
    cfg.proxy.enabled
      ? within(createCaddyClient(cfg.proxy.adminUrl, { timeoutMs: PROBE_MS }).reachable(), false)
      : Promise.resolve(true),
    getBaseDomain(env.db, cfg.baseDomain).catch(() => null),
  ]);
  const out: Missing[] = [];
  if (!engine)
    out.push({
      what: `Docker engine (nothing answers at ${cfg.dockerSocket})`,
      fix: 'Apps cannot run until it does: start dockerd (Debian: apt-get install docker.io), or set SVC_DOCKER_SOCKET.',
    });
  if (!caddy)
    out.push({
      what: `Caddy (its admin API does not answer at ${cfg.proxy.adminUrl.replace(/^unix\/\//, 'unix:')})`,
      fix: 'Apps run but no URL reaches them: start Caddy (the README\'s "Caddy" section has a one-line local start), set SVC_CADDY_ADMIN, or SVC_PROXY=off to go without.',
    });
  if (!base && cfg.proxy.enabled)
    out.push({
      what: 'Base domain',
      fix: 'Apps get no automatic host (<app>.<base domain>) until one is set: SVC_BASE_DOMAIN (on this machine: apps.localhost), or the Instance page.',
    });
  return out;
}

export async function gatherStartFacts(
  env: Services,
  url: string,
  startupMs: number,
  notices: readonly BootNotice[],
): Promise<StartFacts> {
  const cfg = env.config;
  const [token, missing] = await Promise.all([readSetupToken(cfg.dataDir), findMissing(env)]);
  const keyFile = masterKeyPath(cfg.dataDir);
  const isGenerated = (n: BootNotice) => 'master_key_file' in n.fields && n.msg.startsWith('generated');
  // What the banner's own lines say already: the setup token, a generated key, no key at all.
  const said = (n: BootNotice) =>
    'setup_token_file' in n.fields || isGenerated(n) || n.msg.startsWith('SVC_MASTER_KEY is not set');
  return {
    url,
    version: productVersion(),
    startupMs,
    dataDir: cfg.dataDir,
    database:
      dialectOf(env.db) === 'postgres'
        ? 'PostgreSQL (SVC_DATABASE_URL)'
        : `SQLite, ${join(cfg.dataDir, 'svc.db')}`,
    masterKey: cfg.masterKeySource === 'env' ? 'from SVC_MASTER_KEY' : cfg.masterKey ? keyFile : null,
    masterKeyGenerated: notices.some(isGenerated),
    setupLink: token ? `${url}/#token=${token}` : null,
    missing,
    notes: notices.filter((n) => !said(n)).map((n) => n.msg),
  };
}

/** The banner a person reads on the terminal that started the service. */
export function startBanner(f: StartFacts): string {
  const lines = [`svc ${f.version} is running at ${f.url} (started in ${f.startupMs} ms)`, ''];
  if (f.setupLink)
    lines.push(
      `  Set up:      open ${f.setupLink}`,
      '               to create the first operator (the link works once)',
    );
  else lines.push(`  Sign in:     ${f.url}/`);
  lines.push(`  Data:        ${f.dataDir} (${f.database})`);
  if (f.masterKey === null)
    lines.push('  Master key:  none: secrets cannot be sealed; set SVC_MASTER_KEY (64 hex characters)');
  else
    lines.push(
      `  Master key:  ${f.masterKey}${f.masterKeyGenerated ? ' (generated now: back it up, sealed secrets are lost without it)' : ''}`,
    );
  if (f.missing.length) {
    lines.push('', '  Missing:');
    for (const m of f.missing) lines.push(`  - ${m.what}`, `      ${m.fix}`);
  } else lines.push('', '  Docker engine and Caddy answer.');
  if (f.notes.length) {
    lines.push('', '  Notes:');
    for (const n of f.notes) lines.push(`  - ${n}`);
  }
  lines.push('', 'Log lines follow as JSON. Stop with Ctrl+C.', '');
  return lines.join('\n') + '\n';
}

/** The same facts for a log collector: what is missing, one warning each. */
export function logMissing(log: Logger, missing: readonly Missing[]): void {
  for (const m of missing) log.warn({ missing: m.what }, `${m.what}: ${m.fix}`);
}

/**
 * The first words after listening, with how long the start took (process start to listening): a
 * person at a terminal reads a banner (written before any background log line); a log collector
 * reads JSON lines, "listening" first, then what boot found.
 */
export async function announceStart(
  env: Services,
  running: { url: string; port: number },
  notices: readonly BootNotice[],
  tty: boolean,
): Promise<void> {
  const startupMs = Math.round(performance.now());
  if (tty) {
    process.stdout.write(startBanner(await gatherStartFacts(env, running.url, startupMs, notices)));
    return;
  }
  env.log.info(
    {
      url: running.url,
      host: env.config.host,
      port: running.port,
      startup_ms: startupMs,
      pid: process.pid,
    },
    `listening on ${running.url} (started in ${startupMs} ms)`,
  );
  for (const n of notices) env.log[n.level](n.fields, n.msg);
}
