// `svc serve` runs the control plane; `svc setup-token` prints the one-time setup token.
import { spawn } from 'node:child_process';
import { restartMode, RESTART_EXIT_CODE } from '#lib/instance/restart.js';
import { readSetupToken } from '#lib/auth/setup.js';
import type { BootNotice } from '../../boot.js';
import { command, CliFailure } from '../parser.js';
import { config, hostConfig } from '../host.js';

/** Standalone: the same program, arguments and environment, detached; it binds once we have let go. */
function reexec(): void {
  const child = spawn(process.execPath, [...process.execArgv, ...process.argv.slice(1)], {
    stdio: 'inherit',
    detached: true,
    env: process.env,
  });
  child.unref();
}

async function serve(): Promise<void> {
  const host = hostConfig();
  const cfg = host.config;
  const { createEnv, announceSetup } = await import('../../boot.js');
  const { startServer } = await import('../../server.js');
  const { startBackground } = await import('../../background.js');
  const { announceStart, logMissing, findMissing } = await import('../../banner.js');
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

export const serveCommand = command({
  name: 'serve',
  summary: 'run the control plane (configuration from SVC_* variables and the env file)',
  usage: '',
  details: 'Reads SVC_ENV_FILE (default /etc/svc/svc.env), then the process environment (docs/operating.md).',
  run: serve,
});

export const setupTokenCommand = command({
  name: 'setup-token',
  summary: 'print the one-time setup token while setup is open',
  usage: '',
  async run({ io }) {
    const token = await readSetupToken(config().dataDir);
    if (!token) throw new CliFailure('no setup token: setup is closed, or the service has not started yet');
    io.out(token);
  },
});
