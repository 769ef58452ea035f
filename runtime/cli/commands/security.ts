// `svc security-agent on|off|status` and `svc security-check [--undo|--show]` (runtime/security-cli.ts).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_ENV_FILE } from '../../host-config.js';
import { command, CliFailure, UsageError, type Command } from '../parser.js';
import { hostConfig } from '../host.js';
import { AGENT_ACTIONS, type AgentAction } from '../../security-cli.js';

const AGENT_SUMMARIES: Record<AgentAction, string> = {
  on: 'install and start the read-only host security agent (root)',
  off: 'stop and remove the host security agent (root)',
  status: "show the agent's units and its last snapshot",
};

function agentCommand(action: AgentAction): Command {
  return command({
    name: `security-agent ${action}`,
    summary: AGENT_SUMMARIES[action],
    usage: '',
    async run({ io }) {
      const { securityAgent } = await import('../../security-cli.js');
      return securityAgent(action, io);
    },
  });
}

export const securityAgentCommands = AGENT_ACTIONS.map(agentCommand);

/**
 * Records (or with --undo removes) the opt-out, then prints the checklist as the running service
 * computes it. Reads the configuration like `svc serve` does, and never creates anything where no
 * service keeps its data: without the service's database it stops and says where it looked.
 */
export const securityCheckCommand = command({
  name: 'security-check',
  summary: 'opt out of the firewall/fail2ban expectation (or --undo it), then print the checklist',
  usage: '[--undo | --show]',
  options: {
    undo: { type: 'boolean', description: 'remove the recorded opt-out' },
    show: { type: 'boolean', description: 'change nothing, only print the checklist' },
  },
  async run({ values, io }) {
    if (values.undo && values.show) throw new UsageError('--undo and --show exclude each other');
    const host = hostConfig();
    const cfg = host.config;
    // With PostgreSQL the service's data directory still holds its keys and working copies.
    const database = cfg.databaseUrl ? cfg.dataDir : join(cfg.dataDir, 'svc.db');
    if (!existsSync(database))
      throw new CliFailure(
        `no service database at ${database}; nothing was changed. Configuration read from ${host.envFile ?? `the process environment only (no ${process.env.SVC_ENV_FILE || DEFAULT_ENV_FILE})`}${host.envFileError ? ` (${host.envFileError})` : ''}; run it with the SVC_DATA_DIR (or SVC_ENV_FILE) the service uses, from the same working directory if SVC_DATA_DIR is relative`,
      );
    const { securityCheck, cliPosture } = await import('../../security-cli.js');
    io.out(
      `Service data: ${cfg.dataDir}; configuration from ${host.envFile ? `${host.envFile} and the environment` : 'the environment'}.`,
    );
    const mode = values.undo ? 'undo' : values.show ? 'show' : 'record';
    return securityCheck(mode, io, () => cliPosture(cfg), { dataDir: cfg.dataDir });
  },
});
