// `svc install`, `svc uninstall` and `svc doctor` (runtime/install-cli.ts).
import { command, CliFailure, UsageError } from '../parser.js';

/** Anything but a usage error fails with one line; install and uninstall say nothing changed. */
async function failing<T>(what: 'install' | 'uninstall' | 'doctor', fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof CliFailure || e instanceof UsageError) throw e;
    throw new CliFailure(`${(e as Error).message}.${what === 'doctor' ? '' : ' Nothing was changed.'}`);
  }
}

const ROOT = {
  type: 'string',
  value: 'DIR',
  description: 'write under DIR instead of / (a dry run of the files; never starts services)',
} as const;

export const installCommand = command({
  name: 'install',
  summary: 'set up a Debian 12 / Ubuntu 22.04+ server (env file, unit, caddy-api, sysctl)',
  usage: '[--dry-run] [--root DIR] [--base-domain DOMAIN] [--acme-email EMAIL] [--yes]',
  options: {
    'dry-run': { type: 'boolean', description: 'show every change, make none' },
    root: ROOT,
    'base-domain': { type: 'string', value: 'DOMAIN', description: 'the base domain of automatic hosts' },
    'acme-email': { type: 'string', value: 'EMAIL', description: 'the ACME account e-mail' },
    yes: { type: 'boolean', description: 'do not ask before making the changes' },
  },
  async run({ values, io }) {
    const { installCmd } = await import('../../install-cli.js');
    return failing('install', () => installCmd(values, io));
  },
});

export const uninstallCommand = command({
  name: 'uninstall',
  summary: 'undo install (keeps the env file and data unless --purge)',
  usage: '[--purge] [--root DIR] [--dry-run] [--yes]',
  options: {
    purge: { type: 'boolean', description: 'remove the env file and the data too' },
    root: ROOT,
    'dry-run': { type: 'boolean', description: 'show every change, make none' },
    yes: { type: 'boolean', description: 'do not ask' },
  },
  async run({ values, io }) {
    const { uninstallCmd } = await import('../../install-cli.js');
    return failing('uninstall', () => uninstallCmd(values, io));
  },
});

export const doctorCommand = command({
  name: 'doctor',
  summary: 'check the installation and the running service, one line per check',
  usage: '',
  async run({ io }) {
    const { doctorCmd } = await import('../../install-cli.js');
    return failing('doctor', () => doctorCmd(io));
  },
});
