import { loadConfig } from '../../lib/config.js';
import type { Env } from '../../lib/env.js';
import { createEnv } from '../../runtime/boot.js';
import { createLogger } from '../../lib/log.js';

/** A full env over an in-memory database: for handler unit tests and routing tests. */
export async function memoryEnv(vars: Record<string, string> = {}): Promise<Env> {
  const config = loadConfig({ SVC_DATA_DIR: '/nonexistent-svc-test', SVC_MASTER_KEY: 'b'.repeat(64), SVC_PASSWORD_COST: '12', SVC_LOG_LEVEL: 'silent', ...vars });
  return createEnv(config, { dataDir: ':memory:', log: createLogger('silent') });
}
