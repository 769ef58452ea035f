#!/usr/bin/env node
// `svc serve` runs the control plane; `svc setup-token` prints the one-time setup token; `svc install`,
// `svc uninstall` and `svc doctor` set up, remove and check a server install (runtime/install-cli.ts).
import { existsSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { restartMode, RESTART_EXIT_CODE } from '#lib/instance/restart.js';
import { join } from 'node:path';
import { ConfigError, type Config } from '#lib/config.js';
import { loadHostConfig, DEFAULT_ENV_FILE, type HostConfig } from './host-config.js';
import { readSetupToken } from '#lib/auth/setup.js';
import type { BootNotice } from './boot.js';

function hostConfig(): HostConfig {
  try {
    return loadHostConfig();
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`svc: invalid configuration: ${e.message}\n`);
      process.exit(2);
    }
    throw e;
  }
}

const config = (): Config => hostConfig().config;

async function serve(): Promise<void> {
  const host = hostConfig();
  const cfg = host.config;
  const { createEnv, announceSetup } = await import('./boot.js');
  const { startServer } = await import('./server.js');
  const { startBackground } = await import('./background.js');
  const { announceStart, logMissing, findMissing } = await import('./banner.js');
  const notices: BootNotice[] = [];
  if (host.envFileError)
    notices.push({
      level: 'info',
      fields: {},
      msg: `${host.envFileError}; using the process environment only`,
    });
  const env = await createEnv(cfg, { notices });
  await announceSetup(env, notices);
  const running = await startServer(env);
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    env.log.info({ signal }, 'shutting down');
    running.close().then(
      () => process.exit(0),
      (err) => {
        env.log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  // POST /api/instance/restart: drain like a stop, then come back (lib/instance/restart.ts).
  env.requestRestart = () => {
    if (stopping) return;
    stopping = true;
    const mode = restartMode(process.env);
    env.log.info({ mode }, 'restarting');
    running.close().then(
      () => {
        if (mode === 'exit') process.exit(RESTART_EXIT_CODE);
        reexec();
        process.exit(0);
      },
      (err) => {
        env.log.error({ err }, 'shutdown for the restart failed');
        process.exit(1);
      },
    );
  };
  // Once a stop is handled: what boot found, as a banner on a terminal, else as JSON lines.
  const tty = process.stdout.isTTY === true;
  await announceStart(env, running, notices, tty);
  if (stopping) return;
  startBackground(env, running);
  if (!tty) logMissing(env.log, await findMissing(env));
}

/** Standalone: the same program, arguments and environment, detached; it binds once we have let go. */
function reexec(): void {
  const child = spawn(process.execPath, [...process.execArgv, ...process.argv.slice(1)], {
    stdio: 'inherit',
    detached: true,
    env: process.env,
  });
  child.unref();
}

async function setupToken(): Promise<void> {
  const cfg = config();
  const token = await readSetupToken(cfg.dataDir);
  if (!token) {
    process.stderr.write('svc: no setup token: setup is closed, or the service has not started yet\n');
    process.exit(1);
  }
  process.stdout.write(token + '\n');
}

async function securityAgentCmd(): Promise<void> {
  const { securityAgent } = await import('./security-cli.js');
  process.exitCode = await securityAgent(process.argv.slice(3), stdio);
}

/**
 * Records (or with --undo removes) the opt-out, then prints the checklist as the running service
 * computes it. Reads the configuration like `svc serve` does, and never creates anything where no
 * service keeps its data: without the service's database it stops and says where it looked.
 */
async function securityCheckCmd(): Promise<void> {
  const host = hostConfig();
  const cfg = host.config;
  // With PostgreSQL the service's data directory still holds its keys and working copies.
  const database = cfg.databaseUrl ? cfg.dataDir : join(cfg.dataDir, 'svc.db');
  if (!existsSync(database)) {
    process.stderr.write(
      `svc security-check: no service database at ${database}; nothing was changed.\n` +
        `  Configuration read from ${host.envFile ?? `the process environment only (no ${process.env.SVC_ENV_FILE || DEFAULT_ENV_FILE})`}${host.envFileError ? ` (${host.envFileError})` : ''}.\n` +
        '  Run it with the SVC_DATA_DIR (or SVC_ENV_FILE) the service uses, from the same working directory if SVC_DATA_DIR is relative.\n',
    );
    process.exitCode = 1;
    return;
  }
  const { securityCheck } = await import('./security-cli.js');
  const provider = async () => {
    const { cliPosture } = await import('./security-cli.js');
    return cliPosture(cfg);
  };
  stdio.out(
    `Service data: ${cfg.dataDir}; configuration from ${host.envFile ? `${host.envFile} and the environment` : 'the environment'}.`,
  );
  process.exitCode = await securityCheck(process.argv.slice(3), stdio, provider, { dataDir: cfg.dataDir });
}

/**
 * Puts back the copy of the database the last upgrade kept, for the previous version to run on.
 * Refused while a service answers on the configured port: the running one would write over it.
 */
async function serviceAnswers(cfg: Config): Promise<boolean> {
  const host = cfg.host === '0.0.0.0' || cfg.host === '::' ? '127.0.0.1' : cfg.host;
  return fetch(`http://${host.includes(':') ? `[${host}]` : host}:${cfg.port}/api/health`, {
    signal: AbortSignal.timeout(1000),
  }).then(
    () => true,
    () => false,
  );
}

async function rollbackUpgradeCmd(): Promise<void> {
  const cfg = config();
  if (cfg.databaseUrl) {
    stdio.err(
      'svc rollback-upgrade: the database is on PostgreSQL (SVC_DATABASE_URL), where no pre-upgrade copy is kept: restore the dump taken before the upgrade (docs/operating.md); nothing was changed',
    );
    process.exitCode = 1;
    return;
  }
  if (await serviceAnswers(cfg)) {
    stdio.err(
      `svc rollback-upgrade: a service answers on port ${cfg.port}: stop it first (systemctl stop svc); nothing was changed`,
    );
    process.exitCode = 1;
    return;
  }
  const { rollbackUpgrade } = await import('#lib/db/upgrade.js');
  const r = rollbackUpgrade(cfg.dataDir);
  stdio.out(`restored ${join(cfg.dataDir, 'svc.db')} from ${r.restored}`);
  stdio.out(`the upgraded database is kept as ${r.keptAs}`);
  stdio.out(`install version ${r.fromVersion} of svc again, then start it`);
}

/**
 * Restores an instance backup onto this host (lib/instance/restore.ts); refused while a service
 * answers, since the running one would write over what is put back.
 */
async function restoreInstanceCmd(): Promise<void> {
  const { parseRestoreArgs } = await import('./restore-cli.js');
  const parsed = parseRestoreArgs(process.argv.slice(3), process.env);
  if ('error' in parsed) {
    stdio.err(`svc restore-instance: ${parsed.error}`);
    stdio.err(RESTORE_USAGE);
    process.exitCode = 2;
    return;
  }
  const cfg = config();
  if (cfg.databaseUrl) {
    stdio.err(
      'svc restore-instance: the database is on PostgreSQL (SVC_DATABASE_URL), and an instance backup holds a SQLite database: restore the PostgreSQL dump instead (docs/operating.md); nothing was changed',
    );
    process.exitCode = 1;
    return;
  }
  if (await serviceAnswers(cfg)) {
    stdio.err(
      `svc restore-instance: a service answers on port ${cfg.port}: stop it first (systemctl stop svc); nothing was changed`,
    );
    process.exitCode = 1;
    return;
  }
  if (cfg.masterKey && !cfg.masterKey.equals(parsed.key)) {
    stdio.err(
      'svc restore-instance: SVC_MASTER_KEY of this host is another key than --key: the restored instance could not open its secrets; set it to the key of the backup first',
    );
    process.exitCode = 1;
    return;
  }
  const { restoreInstance, RestoreRefused } = await import('#lib/instance/restore.js');
  try {
    const lines = await restoreInstance({
      ...parsed,
      dataDir: cfg.dataDir,
      caddyStorage: cfg.proxy.caddyStorage,
    });
    for (const l of lines) stdio.out(l);
  } catch (e) {
    if (!(e instanceof RestoreRefused)) throw e;
    stdio.err(`svc restore-instance: ${e.message}`);
    process.exitCode = 1;
  }
}

const RESTORE_USAGE = `usage: svc restore-instance <file|s3://bucket/key> --key <hex> [--force]
         [--s3-endpoint URL --s3-access-key-id ID --s3-secret-access-key-env VAR --s3-region R --path-style]`;

/**
 * Prints the master key the service uses (SVC_MASTER_KEY, else the key file beside the data), for
 * the operator to keep apart from every backup: instance backups never contain it.
 */
async function keyCmd(): Promise<void> {
  const [sub] = process.argv.slice(3);
  if (sub !== 'show') {
    stdio.err('usage: svc key show');
    process.exitCode = 2;
    return;
  }
  const cfg = config();
  const { readMasterKeyFile, masterKeyPath } = await import('#lib/crypto/master-key.js');
  const key = cfg.masterKey ?? readMasterKeyFile(cfg.dataDir);
  if (!key) {
    stdio.err(
      `svc key show: no master key: SVC_MASTER_KEY is not set and ${masterKeyPath(cfg.dataDir)} does not exist`,
    );
    process.exitCode = 1;
    return;
  }
  stdio.err(
    'WARNING: this key opens every secret and every backup of this instance. Keep it offline, apart from',
  );
  stdio.err(
    'the backups (they never contain it); whoever holds both holds everything. Clear your terminal after.',
  );
  stdio.out(key.toString('hex'));
}

async function operatorsCmd(): Promise<void> {
  const { operatorsCommand } = await import('./operators-cli.js');
  process.exitCode = await operatorsCommand(process.argv.slice(3), config(), stdio);
}

/**
 * Re-seals every secret under a new master key (runtime/rotate-key-cli.ts). Refused while a service
 * answers: it holds the old key in memory and would seal new values with it.
 */
async function rotateMasterKeyCmd(): Promise<void> {
  if (process.argv.length > 3) {
    stdio.err('usage: svc rotate-master-key');
    process.exitCode = 2;
    return;
  }
  const host = hostConfig();
  if (await serviceAnswers(host.config)) {
    stdio.err(
      `svc rotate-master-key: a service answers on port ${host.config.port}: stop it first (systemctl stop svc); nothing was changed`,
    );
    process.exitCode = 1;
    return;
  }
  const { rotateMasterKey } = await import('./rotate-key-cli.js');
  process.exitCode = await rotateMasterKey(host, stdio);
}

async function installCommand(name: 'install' | 'uninstall' | 'doctor'): Promise<void> {
  const { runInstallCommand } = await import('./install-cli.js');
  process.exitCode = await runInstallCommand(name, process.argv.slice(3), stdio);
}

const stdio = {
  out: (l: string) => process.stdout.write(l + '\n'),
  err: (l: string) => process.stderr.write(l + '\n'),
};

const usage = `usage: svc <command>
  serve                           run the control plane (configuration from SVC_* variables)
  setup-token                     print the one-time setup token while setup is open
  security-agent on|off|status    install, remove or inspect the read-only host security agent (root)
  security-check [--undo|--show]  opt out of the firewall/fail2ban expectation, and print the checklist
  rollback-upgrade                put back the database copy the last upgrade kept (service stopped)
  restore-instance <file|s3://bucket/key> --key <hex> [--force] [--s3-...]
                                  restore an instance backup on this host (service stopped)
  key show                        print the master key, to keep offline apart from the backups
  rotate-master-key               re-seal every secret under a new master key (service stopped)
  operators list [--json]         every operator with role, apps, disabled, TOTP and last sign-in
  operators reset <username>      print a single-use link that sets a new password and turns TOTP off
  operators disable-totp <user>   turn off an operator's second factor and end their sessions
  install [--dry-run] [--root DIR] [--base-domain D] [--acme-email E] [--yes]
                                  set up a Debian 12 / Ubuntu 22.04+ server (env file, unit, caddy-api, sysctl)
  uninstall [--purge] [--root DIR] [--dry-run]
                                  undo install (keeps the env file and data unless --purge)
  doctor                          check the installation and the running service, one line per check
`;

const [command] = process.argv.slice(2);
const commands: Record<string, () => Promise<void>> = {
  serve,
  'setup-token': setupToken,
  'security-agent': securityAgentCmd,
  'security-check': securityCheckCmd,
  'rollback-upgrade': rollbackUpgradeCmd,
  'restore-instance': restoreInstanceCmd,
  key: keyCmd,
  operators: operatorsCmd,
  'rotate-master-key': rotateMasterKeyCmd,
  install: () => installCommand('install'),
  uninstall: () => installCommand('uninstall'),
  doctor: () => installCommand('doctor'),
};
const run = command ? commands[command] : undefined;
if (!run) {
  process.stderr.write(usage);
  process.exit(command ? 2 : 0);
} else {
  run().catch((err) => {
    process.stderr.write(`svc: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
