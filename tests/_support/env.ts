import type { TestContext } from 'node:test';
import { loadConfig } from '#lib/config.js';
import type { Services } from '#lib/http/handler.js';
import { createEnv } from '../../runtime/boot.js';
import { createLogger } from '#lib/log.js';

/** A full env over an in-memory database: for handler unit tests and routing tests. */
export async function memoryEnv(vars: Record<string, string> = {}): Promise<Services> {
  const config = loadConfig({
    SVC_DATA_DIR: '/nonexistent-svc-test',
    SVC_MASTER_KEY: 'b'.repeat(64),
    SVC_PASSWORD_COST: '12',
    SVC_LOG_LEVEL: 'silent',
    ...vars,
  });
  return createEnv(config, { dataDir: ':memory:', log: createLogger('silent') });
}

/**
 * A control plane's services over an in-memory database with the edge running, stopped when test t ends: two control planes syncing one Caddy would undo each other.
 */
export async function edgeEnv(t: TestContext, vars: Record<string, string>): Promise<Services> {
  const config = loadConfig({
    SVC_MASTER_KEY: 'c'.repeat(64),
    SVC_LOG_LEVEL: 'silent',
    SVC_PASSWORD_COST: '12',
    ...vars,
  });
  const env = await createEnv(config, {
    dataDir: ':memory:',
    log: createLogger('silent'),
    edge: { checkIntervalMs: 500, checkerTickMs: 250 },
  });
  env.edge.start();
  t.after(async () => {
    await env.edge.stop();
    await env.series.stop();
    await env.tailer.stop();
    await env.db.destroy();
  });
  return env;
}
