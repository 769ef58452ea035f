// `svc restore-instance` arguments. The S3 secret comes from an environment variable named on the
// command line, so it never shows in the process list or the shell's history.
import type { RestoreOptions } from '#lib/instance/restore.js';

export interface RestoreFlags {
  key?: string;
  force?: boolean;
  'path-style'?: boolean;
  's3-endpoint'?: string;
  's3-access-key-id'?: string;
  's3-secret-access-key-env'?: string;
  's3-region'?: string;
}

/** The restore's options from the parsed command line (runtime/cli/commands/recovery.ts). */
export function restoreOptions(
  source: string | undefined,
  flags: RestoreFlags,
  env: NodeJS.ProcessEnv,
): Omit<RestoreOptions, 'dataDir' | 'caddyStorage'> | { error: string } {
  const keyHex = flags.key ?? null;
  const force = flags.force === true;
  const pathStyle = flags['path-style'] === true;
  const s3: Record<string, string | undefined> = {
    endpoint: flags['s3-endpoint'],
    'access-key-id': flags['s3-access-key-id'],
    'secret-access-key-env': flags['s3-secret-access-key-env'],
    region: flags['s3-region'],
  };
  if (!source) return { error: 'the backup to restore (a file or s3://bucket/key) is missing' };
  if (!keyHex || !/^[0-9a-fA-F]{64}$/.test(keyHex))
    return {
      error: '--key must be the master key, 64 hexadecimal characters (svc key show on the old host)',
    };
  const out: Omit<RestoreOptions, 'dataDir' | 'caddyStorage'> = {
    source,
    key: Buffer.from(keyHex, 'hex'),
    force,
  };
  if (source.startsWith('s3://')) {
    if (!s3.endpoint || !s3['access-key-id'] || !s3['secret-access-key-env'])
      return {
        error: 'an s3:// source needs --s3-endpoint, --s3-access-key-id and --s3-secret-access-key-env',
      };
    const secret = env[s3['secret-access-key-env']!];
    if (!secret)
      return {
        error: `the environment variable ${s3['secret-access-key-env']} (--s3-secret-access-key-env) is not set`,
      };
    out.s3 = {
      endpoint: s3.endpoint,
      access_key_id: s3['access-key-id'],
      secret_access_key: secret,
      region: s3.region ?? 'us-east-1',
      path_style: pathStyle,
    };
  }
  return out;
}
