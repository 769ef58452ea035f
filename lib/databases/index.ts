// Managed databases: a container of a catalog engine on its app's network (never published on
// the host), its data in a named volume, its password sealed, and its connection URL stored as a
// secret env var of the app. Provisioning runs in the background; the row says how it went.
import { randomBytes } from 'node:crypto';
import type { Services as Env } from '../http/handler.js';
import type { AppDatabaseTable } from '../db/schema.js';
import { lockedOn } from '../db/index.js';
import type { App } from '../apps/model.js';
import { previewScope } from '../apps/events.js';
import { newId } from '../crypto/random.js';
import { requireSealer } from '../crypto/seal.js';
import { envBinding } from '../apps/env.js';
import { badRequest, conflict, notFound } from '../http/errors.js';
import {
  guard,
  ensureImage,
  isNotFound,
  isOwned,
  EngineConflictError,
  ownerLabels,
  ensureNetworks,
  networkName,
  volumeName,
  LABEL_APP,
  LABEL_DATABASE,
  LABEL_DATABASE_APP,
  removeOwnedContainer,
  LABEL_VOLUME,
  type Engine,
  type StackPlan,
} from '../docker/index.js';
import { CATALOG, DB_ENGINES, mappedImage, type DbEngine } from './catalog.js';
import { engineDf } from '../docker/df.js';
import { dbBinding } from '../crypto/bindings.js';
import { dropConnectionVar } from './store.js';
import { ensureOverlayNetworks } from '../cluster/spec.js';

export const ENV_VAR = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

export const DATABASE_STATUSES = ['provisioning', 'ready', 'error'] as const;
export type DatabaseStatus = (typeof DATABASE_STATUSES)[number];

export interface DatabaseView {
  id: string;
  app_id: string;
  engine: DbEngine;
  version: string;
  name: string;
  username: string;
  host: string;
  port: number;
  env_var: string;
  status: DatabaseStatus;
  error: string | null;
  size_bytes: number | null;
  created_at: string;
}

interface Secrets {
  password: string;
  root?: string;
}

export { dbBinding } from '../crypto/bindings.js';

export function toView(r: AppDatabaseTable, size: number | null = null): DatabaseView {
  return {
    id: r.id,
    app_id: r.app_id,
    engine: r.engine as DbEngine,
    version: r.version,
    name: r.name,
    username: r.username,
    host: r.host,
    port: r.port,
    env_var: r.env_var,
    status: r.status as DatabaseView['status'],
    error: r.error,
    size_bytes: size,
    created_at: r.created_at,
  };
}

export function dbSecrets(env: Env, r: AppDatabaseTable): Secrets {
  return JSON.parse(env.sealer.open(r.password_sealed, dbBinding(r.id))) as Secrets;
}

export function connectionUrl(
  r: Pick<AppDatabaseTable, 'engine' | 'username' | 'host' | 'port' | 'name'>,
  password: string,
): string {
  const pw = encodeURIComponent(password);
  if (r.engine === 'postgres')
    return `postgres://${encodeURIComponent(r.username)}:${pw}@${r.host}:${r.port}/${r.name}`;
  if (r.engine === 'mariadb')
    return `mysql://${encodeURIComponent(r.username)}:${pw}@${r.host}:${r.port}/${r.name}`;
  return `redis://default:${pw}@${r.host}:${r.port}/0`;
}

export interface CreateInput {
  engine: string;
  version?: string;
  env_var?: string;
}

/** Validates, reserves the row and the env var, and starts provisioning in the background. */
export async function createDatabase(
  env: Env,
  app: App,
  input: CreateInput,
  background: (p: Promise<unknown>) => void,
): Promise<DatabaseView> {
  if (!DB_ENGINES.includes(input.engine as DbEngine))
    throw badRequest(
      `Unknown engine "${String(input.engine).slice(0, 40)}"; one of ${DB_ENGINES.join(', ')}`,
      [{ field: 'engine', message: 'not in the catalog' }],
    );
  const spec = CATALOG[input.engine as DbEngine];
  const version = input.version ?? spec.default_version;
  if (!spec.versions.includes(version))
    throw badRequest(
      `Version "${version.slice(0, 40)}" of ${spec.engine} is not in the catalog; one of ${spec.versions.join(', ')}`,
      [{ field: 'version', message: 'not in the catalog' }],
    );
  const envVar = input.env_var ?? spec.defaultEnvVar;
  if (!ENV_VAR.test(envVar))
    throw badRequest(
      'env_var must be a valid variable name (letters, digits, underscore; not starting with a digit)',
      [{ field: 'env_var', message: 'not an identifier' }],
    );
  requireSealer(env.sealer);
  const id = newId(env.now());
  const short = id.slice(-8);
  const secrets: Secrets = { password: randomBytes(24).toString('base64url') };
  if (spec.engine === 'mariadb') secrets.root = randomBytes(24).toString('base64url');
  const row: AppDatabaseTable = {
    id,
    app_id: app.id,
    engine: spec.engine,
    version,
    name: spec.engine === 'redis' ? '0' : `db_${short}`,
    username: spec.engine === 'redis' ? 'default' : `u_${short}`,
    password_sealed: env.sealer.seal(JSON.stringify(secrets), dbBinding(id)),
    host: `${spec.engine}-${short}`,
    port: spec.port,
    env_var: envVar,
    container: `svc-${app.name}-db-${short}`,
    volume: volumeName(app.name, `db-${short}`),
    status: 'provisioning',
    error: null,
    created_at: new Date(env.now()).toISOString(),
  };
  await env.db.transaction().execute(async (tx) => {
    // The same lock as a change of the app's variables: the name checked stays free until written.
    await tx.selectFrom('apps').select('id').where('id', '=', app.id).$call(lockedOn(tx)).execute();
    const taken = await tx
      .selectFrom('app_env')
      .select('key')
      .where('app_id', '=', app.id)
      .where('key', '=', envVar)
      .executeTakeFirst();
    if (taken) throw conflict(`The app already has an env var "${envVar}"; pick another env_var`);
    await tx.insertInto('app_databases').values(row).execute();
    await tx
      .insertInto('app_env')
      .values({
        app_id: app.id,
        key: envVar,
        secret: 1,
        sealed: env.sealer.seal(connectionUrl(row, secrets.password), envBinding(app.id, envVar)),
      })
      .execute();
  });
  background(provision(env, app, row, secrets));
  return toView(row);
}

function containerSpec(
  row: AppDatabaseTable,
  secrets: Secrets,
): { Env: string[]; Cmd?: string[]; Healthcheck: object } {
  const hc = { Interval: 2e9, Timeout: 5e9, Retries: 60, StartPeriod: 120e9 };
  if (row.engine === 'postgres') {
    return {
      Env: [
        `POSTGRES_USER=${row.username}`,
        `POSTGRES_PASSWORD=${secrets.password}`,
        `POSTGRES_DB=${row.name}`,
      ],
      // Over TCP: the entry point's initialisation server listens on the socket only.
      Healthcheck: {
        Test: ['CMD', 'pg_isready', '-h', '127.0.0.1', '-U', row.username, '-d', row.name],
        ...hc,
      },
    };
  }
  if (row.engine === 'mariadb') {
    return {
      Env: [
        `MARIADB_ROOT_PASSWORD=${secrets.root}`,
        `MARIADB_USER=${row.username}`,
        `MARIADB_PASSWORD=${secrets.password}`,
        `MARIADB_DATABASE=${row.name}`,
      ],
      Healthcheck: { Test: ['CMD', 'healthcheck.sh', '--connect', '--innodb_initialized'], ...hc },
    };
  }
  return {
    Env: [`REDIS_PASSWORD=${secrets.password}`],
    Cmd: ['redis-server', '--requirepass', secrets.password, '--appendonly', 'no', '--save', '60', '1'],
    // A constant script: the password comes from the container's environment.
    Healthcheck: {
      Test: ['CMD-SHELL', 'REDISCLI_AUTH="$REDIS_PASSWORD" redis-cli ping | grep -q PONG'],
      ...hc,
    },
  };
}

export async function ensureAppNetwork(env: Env, appName: string): Promise<string> {
  const name = networkName(appName);
  // The same network the app's default compose network becomes: a deploy reuses it. In cluster
  // mode that is an attachable overlay: the database container stays on this node (its volume is
  // here, and so its backups run here) while the app's tasks on any node reach it by name.
  const plan = {
    app: appName,
    networks: [{ key: 'default', name, internal: false, labels: {} }],
    volumes: [],
    services: [],
  } as unknown as StackPlan;
  if (env.config.cluster.mode === 'swarm') await ensureOverlayNetworks(env.engine, plan);
  else await ensureNetworks(env.engine, plan);
  return name;
}

/** Creates and starts the container of a database row; used by provisioning and by restores. */
export async function createDbContainer(
  env: Env,
  appName: string,
  row: AppDatabaseTable,
  secrets: Secrets,
): Promise<string> {
  const spec = CATALOG[row.engine as DbEngine];
  const image = mappedImage(env.config, spec.images[row.version]!);
  await ensureImage(env.engine, image);
  const network = await ensureAppNetwork(env, appName);
  return guard(env.engine, async () => {
    try {
      const v = await env.engine.docker.getVolume(row.volume).inspect();
      if (!isOwned(env.engine, 'volume', v.Name, v.Labels))
        throw new EngineConflictError(`volume "${row.volume}" exists but was not made by this control plane`);
    } catch (e) {
      if (!isNotFound(e)) throw e;
      await env.engine.docker.createVolume({
        Name: row.volume,
        Labels: {
          ...ownerLabels(env.engine),
          [LABEL_APP]: appName,
          [LABEL_VOLUME]: row.volume.slice(`svc-${appName}_`.length),
          [LABEL_DATABASE]: row.id,
        },
      });
    }
    const c = containerSpec(row, secrets);
    const created = await env.engine.docker.createContainer({
      name: row.container,
      Image: image,
      Env: c.Env,
      Cmd: c.Cmd,
      Healthcheck: c.Healthcheck,
      Labels: { ...ownerLabels(env.engine), [LABEL_DATABASE]: row.id, [LABEL_DATABASE_APP]: appName },
      HostConfig: {
        NetworkMode: network,
        // Never published: only the app's network reaches it.
        PortBindings: {},
        PublishAllPorts: false,
        RestartPolicy: { Name: 'unless-stopped' },
        Mounts: [{ Type: 'volume', Source: row.volume, Target: spec.dataPath }],
        SecurityOpt: ['no-new-privileges'],
      },
      NetworkingConfig: { EndpointsConfig: { [network]: { Aliases: [row.host] } } },
    });
    await created.start();
    return created.id;
  });
}

export async function waitHealthy(engine: Engine, container: string, timeoutMs = 300_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const info = await guard(engine, () => engine.docker.getContainer(container).inspect());
    const health = info.State?.Health?.Status;
    if (health === 'healthy') return;
    if (!info.State?.Running && !info.State?.Restarting)
      throw new Error(`the database container exited (code ${info.State?.ExitCode})`);
    if (health === 'unhealthy') throw new Error('the database container is unhealthy');
    if (Date.now() > until) throw new Error('the database did not become healthy in time');
    await new Promise((r) => setTimeout(r, 500));
  }
}

async function provision(env: Env, app: App, row: AppDatabaseTable, secrets: Secrets): Promise<void> {
  try {
    await createDbContainer(env, app.name, row, secrets);
    await waitHealthy(env.engine, row.container);
    await env.db
      .updateTable('app_databases')
      .set({ status: 'ready', error: null })
      .where('id', '=', row.id)
      .execute();
    env.bus.publish('apps', {
      type: 'database',
      app_id: app.id,
      database_id: row.id,
      status: 'ready',
      ...(await previewScope(env.db, app.id).catch(() => ({}))),
    });
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    env.log.warn({ database: row.id, err: message }, 'database provisioning failed');
    // Nothing to connect to: the app does not keep a URL to it (a retry reserves it again).
    await dropConnectionVar(
      env.db,
      env.sealer,
      app.id,
      row.env_var,
      connectionUrl(row, secrets.password),
    ).catch(() => false);
    await env.db
      .updateTable('app_databases')
      .set({ status: 'error', error: message.slice(0, 500) })
      .where('id', '=', row.id)
      .execute()
      .catch(() => {});
    env.bus.publish('apps', {
      type: 'database',
      app_id: app.id,
      database_id: row.id,
      status: 'error',
      ...(await previewScope(env.db, app.id).catch(() => ({}))),
    });
  }
}

/** Provisioning that the process died during cannot finish: say so. */
export async function recoverDatabases(env: Env): Promise<void> {
  await env.db
    .updateTable('app_databases')
    .set({ status: 'error', error: 'interrupted: the control plane stopped while provisioning' })
    .where('status', '=', 'provisioning')
    .execute();
}

export async function getDatabaseRow(env: Env, appId: string, id: string): Promise<AppDatabaseTable> {
  const r = await env.db
    .selectFrom('app_databases')
    .selectAll()
    .where('app_id', '=', appId)
    .where('id', '=', id)
    .executeTakeFirst();
  if (!r) throw notFound('No such database');
  return r;
}

async function volumeSizes(engine: Engine): Promise<Map<string, number>> {
  try {
    const df = await engineDf<{ Volumes?: Array<{ Name: string; UsageData?: { Size?: number } }> }>(engine);
    return new Map((df.Volumes ?? []).map((v) => [v.Name, v.UsageData?.Size ?? -1]));
  } catch {
    return new Map();
  }
}

export async function listDatabases(
  env: Env,
  appId: string | null,
  withSizes: boolean,
): Promise<DatabaseView[]> {
  let q = env.db.selectFrom('app_databases').selectAll().orderBy('created_at');
  if (appId) q = q.where('app_id', '=', appId);
  const rows = await q.execute();
  const sizes = withSizes && rows.length ? await volumeSizes(env.engine) : new Map<string, number>();
  return rows.map((r) => {
    const s = sizes.get(r.volume);
    return toView(r, s === undefined || s < 0 ? null : s);
  });
}

/** Removes the container, the volume unless kept, the env var it set, and the row. */
export async function deleteDatabase(
  env: Env,
  appId: string,
  id: string,
  keepData: boolean,
): Promise<{ kept_volume: string | null }> {
  const row = await getDatabaseRow(env, appId, id);
  await removeOwnedContainer(env.engine, row.container);
  if (!keepData) {
    await guard(env.engine, async () => {
      try {
        const v = await env.engine.docker.getVolume(row.volume).inspect();
        if (isOwned(env.engine, 'volume', v.Name, v.Labels))
          await env.engine.docker.getVolume(row.volume).remove();
      } catch (e) {
        if (!isNotFound(e)) throw e;
      }
    });
  }
  await env.db.transaction().execute(async (tx) => {
    await tx.deleteFrom('app_env').where('app_id', '=', appId).where('key', '=', row.env_var).execute();
    await tx.deleteFrom('app_databases').where('id', '=', id).execute();
  });
  return { kept_volume: keepData ? row.volume : null };
}
