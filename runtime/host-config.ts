// One way to read the configuration for every command: the service's environment file
// (SVC_ENV_FILE, default /etc/svc/svc.env, the file systemd hands to `svc serve` and that
// `svc security-agent` edits) under the process environment, which wins. `svc serve` started by
// hand and `svc security-check` in a root shell therefore see what the running service sees.
import { readFileSync } from 'node:fs';
import { loadConfig, parseEnvFile, type Config } from '#lib/config.js';
import { DEFAULT_ENV_FILE } from '#lib/install/paths.js';

export { DEFAULT_ENV_FILE };

export interface HostConfig {
  config: Config;
  /** The environment file that was read, or null. */
  envFile: string | null;
  /** Why an existing environment file could not be read. */
  envFileError: string | null;
}

export function loadHostConfig(processEnv: NodeJS.ProcessEnv = process.env): HostConfig {
  const path = processEnv.SVC_ENV_FILE?.trim() || DEFAULT_ENV_FILE;
  let fromFile: Record<string, string> = {};
  let envFile: string | null = null;
  let envFileError: string | null = null;
  try {
    fromFile = parseEnvFile(readFileSync(path, 'utf8'));
    envFile = path;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'ENOTDIR')
      envFileError = `cannot read ${path}: ${code === 'EACCES' ? 'permission denied' : (e as Error).message}`;
  }
  return { config: loadConfig({ ...fromFile, ...processEnv }), envFile, envFileError };
}
