// `svc restore-instance` arguments. The S3 secret comes from an environment variable named on the
// command line, so it never shows in the process list or the shell's history.
import type { RestoreOptions } from '#lib/instance/restore.js';

export function parseRestoreArgs(
  args: string[],
  env: NodeJS.ProcessEnv,
): Omit<RestoreOptions, 'dataDir' | 'caddyStorage'> | { error: string } {
  let source: string | null = null;
  let keyHex: string | null = null;
  let force = false;
  let pathStyle = false;
  const s3: Record<string, string> = {};
  const valued = new Set([
    '--key',
    '--s3-endpoint',
    '--s3-access-key-id',
    '--s3-secret-access-key-env',
    '--s3-region',
  ]);
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--force') force = true;
    else if (a === '--path-style') pathStyle = true;
    else if (valued.has(a)) {
      const v = args[++i];
      if (v === undefined) return { error: `${a} needs a value` };
      if (a === '--key') keyHex = v;
      else s3[a.slice('--s3-'.length)] = v;
    } else if (a.startsWith('-')) return { error: `unknown option ${a}` };
    else if (source === null) source = a;
    else return { error: `one source only (got ${a} too)` };
  }
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
    const secret = env[s3['secret-access-key-env']];
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
