// `svc key show` and `svc rotate-master-key`.
import { command, CliFailure } from '../parser.js';
import { config, hostConfig, requireServiceStopped } from '../host.js';

/**
 * Prints the master key the service uses (SVC_MASTER_KEY, else the key file beside the data), for
 * the operator to keep apart from every backup: instance backups never contain it.
 */
export const keyShowCommand = command({
  name: 'key show',
  summary: 'print the master key, to keep offline apart from the backups',
  usage: '',
  async run({ io }) {
    const cfg = config();
    const { readMasterKeyFile, masterKeyPath } = await import('#lib/crypto/master-key.js');
    const key = cfg.masterKey ?? readMasterKeyFile(cfg.dataDir);
    if (!key)
      throw new CliFailure(
        `no master key: SVC_MASTER_KEY is not set and ${masterKeyPath(cfg.dataDir)} does not exist`,
      );
    io.err(
      'WARNING: this key opens every secret and every backup of this instance. Keep it offline, apart from',
    );
    io.err(
      'the backups (they never contain it); whoever holds both holds everything. Clear your terminal after.',
    );
    io.out(key.toString('hex'));
  },
});

/**
 * Re-seals every secret under a new master key (runtime/rotate-key-cli.ts). Refused while a service
 * answers: it holds the old key in memory and would seal new values with it.
 */
export const rotateMasterKeyCommand = command({
  name: 'rotate-master-key',
  summary: 're-seal every secret under a new master key (service stopped)',
  usage: '',
  async run({ io }) {
    const host = hostConfig();
    await requireServiceStopped(host.config);
    const { rotateMasterKey } = await import('../../rotate-key-cli.js');
    return rotateMasterKey(host, io);
  },
});
