// What the host-side commands share: the configuration as the service reads it, and whether a
// service answers on its port (commands that rewrite its data refuse while one does).
import { ConfigError, type Config } from '#lib/config.js';
import { loadHostConfig, type HostConfig } from '../host-config.js';
import { CliFailure, UsageError } from './parser.js';

/** The service's configuration (env file, then the process environment); invalid: a usage error. */
export function hostConfig(): HostConfig {
  try {
    return loadHostConfig();
  } catch (e) {
    if (e instanceof ConfigError) throw new UsageError(`invalid configuration: ${e.message}`);
    throw e;
  }
}

export const config = (): Config => hostConfig().config;

export async function serviceAnswers(cfg: Config): Promise<boolean> {
  const host = cfg.host === '0.0.0.0' || cfg.host === '::' ? '127.0.0.1' : cfg.host;
  return fetch(`http://${host.includes(':') ? `[${host}]` : host}:${cfg.port}/api/health`, {
    signal: AbortSignal.timeout(1000),
  }).then(
    () => true,
    () => false,
  );
}

/** Refuses while a service answers on the configured port: it would write over what we change. */
export async function requireServiceStopped(cfg: Config): Promise<void> {
  if (await serviceAnswers(cfg))
    throw new CliFailure(
      `a service answers on port ${cfg.port}: stop it first (systemctl stop svc); nothing was changed`,
    );
}
