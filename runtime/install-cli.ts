// `svc install`, `svc uninstall` and `svc doctor`: argument parsing, the host's probes and the
// printing. The plans are lib/install/plan.ts, the checks lib/doctor/checks.ts.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { statfs } from 'node:fs/promises';
import { request } from 'node:http';
import { connect } from 'node:tls';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline/promises';
import { ConfigError, loadConfig, parseEnvFile, type Config } from '#lib/config.js';
import { readSetupToken } from '#lib/auth/setup.js';
import { createCaddyClient } from '#lib/proxy/caddy.js';
import { createDnsChecker, detectAddresses } from '#lib/domains/dns.js';
import { checkHostname } from '#lib/util/hostname.js';
import { DEFAULT_ENV_FILE, UNIT_NAME, under } from '#lib/install/paths.js';
import {
  describeChange,
  missingPackages,
  planInstall,
  planUninstall,
  previewText,
  supportedOs,
  type Change,
  type HostState,
  type Plan,
} from '#lib/install/plan.js';
import { execRunner, pathState, readHostState, type CmdRunner } from '#lib/install/state.js';
import { applyPlan } from '#lib/install/apply.js';
import { checkoutOf, codeProblems, describeProblems } from '#lib/install/code-owner.js';
import {
  formatLine,
  parseListeners,
  runChecks,
  type DoctorContext,
  type TlsPeer,
} from '#lib/doctor/checks.js';
import { loadHostConfig } from './host-config.js';
import { UsageError } from './cli/parser.js';

export interface Io {
  out(line: string): void;
  err(line: string): void;
}

export interface InstallCliOptions {
  run?: CmdRunner;
  randomHex?: (bytes: number) => string;
  /** How long a live install waits for the service to write its setup token. */
  tokenWaitMs?: number;
}

/**
 * The unit runs this checkout's code as root: refused (one line naming the path) when anyone but
 * root can change it, whatever the mode (a dry run says what the real one would do).
 */
async function refuseForeignCode(io: Io): Promise<boolean> {
  const checkout = checkoutOf(CLI_SCRIPT);
  const problems = await codeProblems(checkout);
  if (problems.length === 0) return false;
  io.err(
    `svc install: refusing to make a root service of code others can change: ${describeProblems(problems)}. Make ${checkout} root's (chown -R root:root, chmod -R go-w, folders above too) or install from a copy only root can write. Nothing was changed.`,
  );
  return true;
}

/** A person at a terminal confirms a live change; scripts pass --yes (or have no terminal). */
async function confirm(io: Io, question: string): Promise<boolean> {
  if (!process.stdin.isTTY) return true;
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  try {
    return /^y(es)?$/i.test((await rl.question(`${question} [y/N] `)).trim());
  } finally {
    rl.close();
  }
}

const randomHex = (bytes: number) => randomBytes(bytes).toString('hex');
const CLI_SCRIPT = fileURLToPath(new URL('./cli.js', import.meta.url));
const isRoot = () => (process.getuid?.() ?? 0) === 0;

function printPlan(io: Io, plan: Plan, dryRun: boolean): void {
  for (const c of plan.changes) {
    io.out(`  ${describeChange(c)}`);
    if (dryRun && c.kind === 'file')
      for (const l of previewText(c).replace(/\n$/, '').split('\n')) io.out(`      | ${l}`);
  }
}

function printNotes(io: Io, plan: Plan): void {
  for (const n of plan.notes) io.out(`Note: ${n}`);
}

/** The address operators open first: the control domain over HTTPS, else the plain port. */
function setupUrl(cfg: Config): string {
  if (cfg.publicUrl) return cfg.publicUrl.replace(/\/?$/, '/');
  if (cfg.controlDomain) return `https://${cfg.controlDomain}/`;
  const host =
    cfg.host === '0.0.0.0' ? (detectAddresses().find((a) => !a.includes(':')) ?? '<this host>') : cfg.host;
  return `http://${host}:${cfg.port}/`;
}

async function waitForToken(dataDir: string, ms: number): Promise<string | null> {
  const until = Date.now() + ms;
  for (;;) {
    const t = await readSetupToken(dataDir);
    if (t || Date.now() >= until) return t;
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Prerequisites a live install checks before changing anything; returns false to stop. */
async function prerequisites(io: Io, state: HostState, run: CmdRunner, dryRun: boolean): Promise<boolean> {
  const ss = await run('ss', ['-Hltnp']);
  const listeners = ss.code === 0 ? parseListeners(ss.stdout) : null;
  let fine = true;
  for (const port of [80, 443]) {
    const holders = (listeners ?? []).filter((l) => l.port === port && l.process !== 'caddy');
    if (holders.length) {
      io.err(
        `error  port ${port} is held by ${holders.map((h) => h.process ?? 'an unknown process').join(', ')}: Caddy needs it. Stop that service, then run svc install again.`,
      );
      fine = false;
    }
  }
  if (!listeners) io.out('warning  could not list listening sockets (ss): ports 80 and 443 not checked');
  if (!state.paths['/var/run/docker.sock'] && !dryRun)
    io.out('Note: no engine socket at /var/run/docker.sock yet: docker.service is started below.');
  return fine;
}

export interface InstallFlags {
  'dry-run'?: boolean;
  root?: string;
  'base-domain'?: string;
  'acme-email'?: string;
  yes?: boolean;
}

export async function installCmd(v: InstallFlags, io: Io, o: InstallCliOptions = {}): Promise<number> {
  const dryRun = v['dry-run'] === true;
  const root = typeof v.root === 'string' ? resolve(v.root) : '/';
  const live = root === '/';
  const run = o.run ?? execRunner;
  const baseDomain = typeof v['base-domain'] === 'string' ? v['base-domain'].trim().toLowerCase() : undefined;
  const acmeEmail = typeof v['acme-email'] === 'string' ? v['acme-email'].trim() : undefined;
  if (baseDomain !== undefined) {
    const h = checkHostname(baseDomain);
    if (!h.ok) throw new UsageError(`--base-domain: ${h.message}`);
  }
  try {
    loadConfig({
      ...(baseDomain ? { SVC_BASE_DOMAIN: baseDomain } : {}),
      ...(acmeEmail !== undefined ? { SVC_ACME_EMAIL: acmeEmail } : {}),
    });
  } catch (e) {
    if (e instanceof ConfigError)
      throw new UsageError(
        `--${e.variable === 'SVC_ACME_EMAIL' ? 'acme-email' : 'base-domain'}: ${e.message.replace(/^\w+: /, '')}`,
      );
    throw e;
  }
  if (await refuseForeignCode(io)) return 1;
  if (live && !dryRun && !isRoot()) {
    io.err(
      'svc install must run as root (it writes under /etc and /var/lib and enables services); --dry-run shows what it would do.',
    );
    return 1;
  }
  let state = await readHostState(root, run);
  const os = supportedOs(state.os);
  if (!os.ok && live) {
    io.err(`svc install: ${os.reason}. Nothing was changed.`);
    return 1;
  }
  io.out(
    `svc install${dryRun ? ' --dry-run' : ''}: ${os.ok ? os.name : `(${os.reason}; not checked under --root)`}${live ? '' : `, under ${root}`}`,
  );

  const missing = missingPackages(state);
  if (live && missing.length) {
    const argv = ['apt-get', 'install', '-y', '-q', '--no-install-recommends', '--', ...missing];
    if (dryRun) io.out(`Would install packages: ${argv.join(' ')}`);
    else {
      io.out(`Installing packages: ${missing.join(', ')}`);
      for (const a of [['apt-get', 'update', '-q'], argv]) {
        const r = await run(a[0]!, a.slice(1), { ...process.env, DEBIAN_FRONTEND: 'noninteractive' });
        if (r.code !== 0) {
          io.err(
            `${a.join(' ')} failed: ${(r.stderr || r.stdout).trim().slice(-2000)}\nNothing else was changed.`,
          );
          return 1;
        }
      }
      state = await readHostState(root, run);
    }
  }
  if (live && !(await prerequisites(io, state, run, dryRun))) return 1;

  const plan = planInstall(
    { node: process.execPath, cli: CLI_SCRIPT, baseDomain, acmeEmail },
    state,
    o.randomHex ?? randomHex,
  );
  if (live && !state.paths['/var/run/docker.sock'] && !dryRun)
    plan.changes.unshift({ kind: 'command', argv: ['systemctl', 'enable', '--now', 'docker.service'] });
  if (plan.changes.length === 0)
    io.out('Nothing to change: everything svc install sets up is already in place.');
  else if (dryRun) {
    io.out(`Would make ${plan.changes.length} changes (dry run: nothing was changed):`);
    printPlan(io, plan, true);
  } else {
    if (live && v.yes !== true) {
      io.out(`svc install will make ${plan.changes.length} changes:`);
      printPlan(io, plan, false);
      if (!(await confirm(io, 'Make them?'))) {
        io.err('Nothing was changed.');
        return 1;
      }
    }
    io.out(`Making ${plan.changes.length} changes:`);
    try {
      await applyPlan(root, plan.changes, run, (l) => io.out(`  ${l}`));
    } catch (e) {
      io.err(`svc install: ${(e as Error).message}`);
      io.err(
        'The changes listed before this one were made; fix the cause and run svc install again: it continues from there.',
      );
      return 1;
    }
  }
  printNotes(io, plan);
  await printSetup(io, root, live && !dryRun, plan.changes, o.tokenWaitMs ?? 60_000);
  return 0;
}

async function printSetup(
  io: Io,
  root: string,
  waitForService: boolean,
  changes: readonly Change[],
  waitMs: number,
): Promise<void> {
  const envChange = changes.find(
    (c): c is Extract<Change, { kind: 'file' }> => c.kind === 'file' && c.path === DEFAULT_ENV_FILE,
  );
  const envText = envChange?.text ?? (await pathState(under(root, DEFAULT_ENV_FILE)))?.text ?? '';
  let cfg: Config;
  try {
    cfg = loadConfig(parseEnvFile(envText));
  } catch (e) {
    io.err(`${DEFAULT_ENV_FILE}: ${(e as Error).message}`);
    return;
  }
  const url = setupUrl(cfg);
  const tokenFile = `${cfg.dataDir}/setup.token`;
  if (!waitForService) {
    io.out(
      `Once ${UNIT_NAME} runs, it writes the one-time setup token to ${tokenFile} (\`svc setup-token\` prints it); open ${url}#token=<that token>.`,
    );
    return;
  }
  const token = await waitForToken(cfg.dataDir, waitMs);
  if (token)
    io.out(`Setup: open ${url}#token=${token} (one time; \`svc setup-token\` prints the token again).`);
  else if (await pathState(`${cfg.dataDir}/svc.db`))
    io.out(`No setup token in ${tokenFile}: setup is closed (an operator exists); sign in at ${url}.`);
  else
    io.out(
      `${UNIT_NAME} has not written ${tokenFile} yet: see \`journalctl -u ${UNIT_NAME}\`, then \`svc setup-token\`.`,
    );
}

export async function uninstallCmd(
  v: { 'dry-run'?: boolean; root?: string; purge?: boolean; yes?: boolean },
  io: Io,
  o: InstallCliOptions = {},
): Promise<number> {
  const dryRun = v['dry-run'] === true;
  const root = typeof v.root === 'string' ? resolve(v.root) : '/';
  const run = o.run ?? execRunner;
  if (root === '/' && !dryRun && !isRoot()) {
    io.err('svc uninstall must run as root; --dry-run shows what it would do.');
    return 1;
  }
  const state = await readHostState(root, run);
  const plan = planUninstall({ purge: v.purge === true }, state);
  if (plan.changes.length === 0) io.out('Nothing to change: svc is not installed here.');
  else if (dryRun) {
    io.out(`Would make ${plan.changes.length} changes (dry run: nothing was changed):`);
    printPlan(io, plan, false);
  } else {
    io.out(`Making ${plan.changes.length} changes:`);
    try {
      await applyPlan(root, plan.changes, run, (l) => io.out(`  ${l}`));
    } catch (e) {
      io.err(`svc uninstall: ${(e as Error).message}`);
      return 1;
    }
  }
  printNotes(io, plan);
  return 0;
}

export function pingEngine(socketPath: string): Promise<{ version: string }> {
  return new Promise((done, fail) => {
    const req = request({ socketPath, path: '/version', timeout: 5_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body = (body + c).slice(0, 64 * 1024)));
      res.on('end', () => {
        if (res.statusCode !== 200) return fail(new Error(`answered ${res.statusCode}`));
        try {
          done({ version: String((JSON.parse(body) as { Version?: string }).Version ?? '?') });
        } catch {
          fail(new Error('answered something that is not the engine API'));
        }
      });
    });
    req.on('timeout', () => req.destroy(new Error('no answer within 5 s')));
    req.on('error', (e: NodeJS.ErrnoException) => fail(new Error(e.code ?? e.message)));
    req.end();
  });
}

export function tlsPeer(caRoot: string | null): DoctorContext['tls'] {
  const ca = caRoot ? readFileSync(caRoot, 'utf8') : undefined;
  return (address, port, servername) =>
    new Promise<TlsPeer>((done) => {
      const socket = connect({
        host: address,
        port,
        servername,
        ca,
        rejectUnauthorized: false,
        ALPNProtocols: ['http/1.1'],
      });
      socket.setTimeout(5_000, () => {
        socket.destroy();
        done({ cert: null, authorized: false, error: 'no TLS handshake within 5 s' });
      });
      socket.once('secureConnect', () => {
        const r: TlsPeer = {
          cert: socket.getPeerX509Certificate() ?? null,
          authorized: socket.authorized,
          error: socket.authorizationError ? String(socket.authorizationError) : undefined,
        };
        socket.destroy();
        done(r);
      });
      socket.once('error', (e: NodeJS.ErrnoException) =>
        done({
          cert: null,
          authorized: false,
          error: e.code === 'ECONNREFUSED' ? `nothing listens on ${port}` : (e.code ?? e.message),
        }),
      );
    });
}

export async function liveDoctorContext(run: CmdRunner = execRunner): Promise<DoctorContext> {
  const host = loadHostConfig();
  const config = host.config;
  const dns = createDnsChecker({ resolver: config.proxy.dnsResolver, publicIps: config.proxy.publicIps });
  return {
    config,
    envFile: host.envFile,
    envFileState: host.envFile ? await pathState(host.envFile) : null,
    host: await readHostState('/', run),
    now: Date.now(),
    pingEngine,
    caddyConfig: (adminUrl) => createCaddyClient(adminUrl, { timeoutMs: 5_000 }).getConfig(),
    health: async (url) => {
      const r = await fetch(url, { signal: AbortSignal.timeout(5_000) });
      return { status: r.status, body: (await r.text()).slice(0, 1024) };
    },
    listeners: async () => {
      const r = await run('ss', ['-Hltnp']);
      return r.code === 0 ? parseListeners(r.stdout) : null;
    },
    dns,
    tls: tlsPeer(config.proxy.acmeCaRoot),
    diskSpace: async (path) => {
      const s = await statfs(path);
      return { free: s.bavail * s.bsize, total: s.blocks * s.bsize };
    },
    stat: pathState,
    code: async () => {
      const checkout = checkoutOf(CLI_SCRIPT);
      return { checkout, problems: await codeProblems(checkout) };
    },
  };
}

export async function doctorCmd(io: Io, ctx?: DoctorContext): Promise<number> {
  const lines = await runChecks(ctx ?? (await liveDoctorContext()));
  for (const l of lines) io.out(formatLine(l));
  const errors = lines.filter((l) => l.status === 'error').length;
  const warnings = lines.filter((l) => l.status === 'warning').length;
  io.out(`${errors} errors, ${warnings} warnings.`);
  return errors ? 1 : 0;
}
