// Every `svc` command, one declaration each (runtime/cli/parser.ts `Command`): the overview lists
// them in this order. A new command is a new declaration in runtime/cli/commands/ and a line here.
import type { Command } from './parser.js';
import { serveCommand, setupTokenCommand } from './commands/serve.js';
import { securityAgentCommands, securityCheckCommand } from './commands/security.js';
import { keyShowCommand, rotateMasterKeyCommand } from './commands/keys.js';
import { restoreInstanceCommand, rollbackUpgradeCommand } from './commands/recovery.js';
import {
  operatorsDisableTotpCommand,
  operatorsListCommand,
  operatorsResetCommand,
} from './commands/operators.js';
import { doctorCommand, installCommand, uninstallCommand } from './commands/install.js';
import { loginCommand } from './commands/login.js';
import { appsCommand } from './commands/apps.js';
import { deployCommand } from './commands/deploy.js';
import { logsCommand } from './commands/logs.js';
import { envCommand } from './commands/env.js';
import { applyCommand, exportCommand } from './commands/appfile.js';
import { jobsCommand, runCommandCommand } from './commands/jobs.js';
import { completionCommand } from './commands/completion.js';

export const COMMANDS: readonly Command[] = [
  serveCommand,
  setupTokenCommand,
  ...securityAgentCommands,
  securityCheckCommand,
  rollbackUpgradeCommand,
  restoreInstanceCommand,
  keyShowCommand,
  rotateMasterKeyCommand,
  operatorsListCommand,
  operatorsResetCommand,
  operatorsDisableTotpCommand,
  installCommand,
  uninstallCommand,
  doctorCommand,
  // The client of a remote instance (runtime/cli/remote.ts): the typed API client, a token.
  loginCommand,
  appsCommand,
  deployCommand,
  logsCommand,
  envCommand,
  runCommandCommand,
  jobsCommand,
  exportCommand,
  applyCommand,
  completionCommand,
];
