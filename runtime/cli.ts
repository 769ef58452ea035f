#!/usr/bin/env node
// `svc serve` runs the control plane; `svc setup-token` prints the one-time setup token.
import { loadConfig, ConfigError, type Config } from '../lib/config.js';
import { readSetupToken } from '../lib/auth/setup.js';

function config(): Config {
  try {
    return loadConfig();
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`svc: invalid configuration: ${e.message}\n`);
      process.exit(2);
    }
    throw e;
  }
}

async function serve(): Promise<void> {
  const cfg = config();
  const { createEnv, announceSetup } = await import('./boot.js');
  const { startServer } = await import('./server.js');
  const env = await createEnv(cfg);
  await announceSetup(env);
  const running = await startServer(env);
  const { startBackground } = await import('./background.js');
  startBackground(env, running);
  env.log.info({ url: running.url, host: cfg.host, port: running.port }, 'listening');
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

/** Records (or with --undo removes) the opt-out, then prints the checklist as the API computes it. */
async function securityCheckCmd(): Promise<void> {
  const cfg = config();
  const { securityCheck } = await import('./security-cli.js');
  const provider = async () => {
    const { createEnv } = await import('./boot.js');
    const { posture } = await import('../lib/security/live.js');
    const { createLogger } = await import('../lib/log.js');
    const env = await createEnv(cfg, { log: createLogger('silent') });
    try {
      return await posture(env);
    } finally {
      await env.db.destroy();
    }
  };
  process.exitCode = await securityCheck(process.argv.slice(3), stdio, provider, { dataDir: cfg.dataDir });
}

const stdio = { out: (l: string) => process.stdout.write(l + '\n'), err: (l: string) => process.stderr.write(l + '\n') };

const usage = `usage: svc <command>
  serve                           run the control plane (configuration from SVC_* variables)
  setup-token                     print the one-time setup token while setup is open
  security-agent on|off|status    install, remove or inspect the read-only host security agent (root)
  security-check [--undo|--show]  opt out of the firewall/fail2ban expectation, and print the checklist
`;

const [command] = process.argv.slice(2);
const commands: Record<string, () => Promise<void>> = { serve, 'setup-token': setupToken, 'security-agent': securityAgentCmd, 'security-check': securityCheckCmd };
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
