// `svc rollback-upgrade` and `svc restore-instance`: put back what an upgrade or a backup kept,
// with the service stopped (the running one would write over it).
import { join } from 'node:path';
import { command, CliFailure, UsageError } from '../parser.js';
import { config, requireServiceStopped } from '../host.js';

/** Puts back the copy of the database the last upgrade kept, for the previous version to run on. */
export const rollbackUpgradeCommand = command({
  name: 'rollback-upgrade',
  summary: 'put back the database copy the last upgrade kept (service stopped)',
  usage: '',
  async run({ io }) {
    const cfg = config();
    if (cfg.databaseUrl)
      throw new CliFailure(
        'the database is on PostgreSQL (SVC_DATABASE_URL), where no pre-upgrade copy is kept: restore the dump taken before the upgrade (docs/operating.md); nothing was changed',
      );
    await requireServiceStopped(cfg);
    const { rollbackUpgrade } = await import('#lib/db/upgrade.js');
    const r = rollbackUpgrade(cfg.dataDir);
    io.out(`restored ${join(cfg.dataDir, 'svc.db')} from ${r.restored}`);
    io.out(`the upgraded database is kept as ${r.keptAs}`);
    io.out(`install version ${r.fromVersion} of svc again, then start it`);
  },
});

/** Restores an instance backup onto this host (lib/instance/restore.ts). */
export const restoreInstanceCommand = command({
  name: 'restore-instance',
  summary: 'restore an instance backup on this host (service stopped)',
  usage: '<file|s3://bucket/key> --key <hex> [--force] [--s3-...]',
  args: { min: 1, max: 1, names: 'the backup to restore (a file or s3://bucket/key)' },
  options: {
    key: { type: 'string', value: 'HEX', description: 'the master key of the backed-up instance (64 hex)' },
    force: { type: 'boolean', description: 'restore over a data directory that is not empty' },
    's3-endpoint': { type: 'string', value: 'URL', description: 'the S3 endpoint of an s3:// source' },
    's3-access-key-id': { type: 'string', value: 'ID', description: 'its access key id' },
    's3-secret-access-key-env': {
      type: 'string',
      value: 'VAR',
      description: 'the environment variable holding its secret (never on the command line)',
    },
    's3-region': { type: 'string', value: 'R', description: 'its region (default us-east-1)' },
    'path-style': { type: 'boolean', description: 'path-style S3 addressing' },
  },
  async run({ values, args, io }) {
    const { restoreOptions } = await import('../../restore-cli.js');
    const parsed = restoreOptions(args[0], values, process.env);
    if ('error' in parsed) throw new UsageError(parsed.error);
    const cfg = config();
    if (cfg.databaseUrl)
      throw new CliFailure(
        'the database is on PostgreSQL (SVC_DATABASE_URL), and an instance backup holds a SQLite database: restore the PostgreSQL dump instead (docs/operating.md); nothing was changed',
      );
    await requireServiceStopped(cfg);
    if (cfg.masterKey && !cfg.masterKey.equals(parsed.key))
      throw new CliFailure(
        'SVC_MASTER_KEY of this host is another key than --key: the restored instance could not open its secrets; set it to the key of the backup first',
      );
    const { restoreInstance, RestoreRefused } = await import('#lib/instance/restore.js');
    try {
      const lines = await restoreInstance({
        ...parsed,
        dataDir: cfg.dataDir,
        caddyStorage: cfg.proxy.caddyStorage,
      });
      for (const l of lines) io.out(l);
    } catch (e) {
      if (e instanceof RestoreRefused) throw new CliFailure(e.message);
      throw e;
    }
  },
});
