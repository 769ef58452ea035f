// Managed databases: a container of an engine (engines/) on its app's network (never published
// on the host), its data in a named volume, its password sealed, and its connection URL stored as
// a secret env var of the app. Provisioning runs in the background; the row says how it went.
import { randomBytes } from 'node:crypto';
import type { Services } from '../http/handler.js';
import type { AppDatabaseTable } from '../db/schema.js';
import type { App } from '../apps/model.js';
import { previewScope } from '../apps/events.js';
import { newId } from '../crypto/random.js';
import { requireSealer } from '../crypto/seal.js';
import { envBinding } from '../apps/env.js';
import { badRequest, conflict } from '../http/errors.js';
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
import { engineDf } from '../docker/df.js';
import { dbBinding } from '../crypto/bindings.js';
import { ensureOverlayNetworks } from '../cluster/spec.js';
import { DB_ENGINES, toView, type DatabaseView } from './model.js';
import { ENGINES, engineOf, imageOf, isEngine, type DatabaseEngine, type Secrets } from './engines/index.js';
import { waitHealthy } from './container.js';
import {
  databaseRows,
  deleteDatabaseRow,
  dropConnectionVar,
  failProvisioning,
  getDatabaseRow,
  insertDatabase,
  setDatabaseStatus,
} from './store.js';

export const ENV_VAR = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/** The connection URL the app's variable holds, in the engine's form. */
export function connectionUrl(
  r: Pick<AppDatabaseTable, 'engine' | 'username' | 'host' | 'port' | 'name'>,
  password: string,
): string {
  return engineOf(r.engine).connectionUrl(r, password);
}

export interface CreateInput {
  engine: string;
  version?: string;
  env_var?: string;
}

/** The engine, version and variable a request asks for, each checked against the table (400). */
function checked(input: CreateInput): { def: DatabaseEngine; version: string; envVar: string } {
  if (!isEngine(input.engine))
    throw badRequest(
      `Unknown engine "${String(input.engine).slice(0, 40)}"; one of ${DB_ENGINES.join(', ')}`,
      [{ field: 'engine', message: 'not in the catalog' }],
    );
  const def = ENGINES[input.engine];
  const { spec } = def;
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
  return { def, version, envVar };
}

type ProvisionDeps = Pick<Services, 'db' | 'sealer' | 'engine' | 'config' | 'bus' | 'log' | 'now'>;

/** Validates, reserves the row and the env var, and starts provisioning in the background. */
export async function createDatabase(
  env: ProvisionDeps,
  app: App,
  input: CreateInput,
  background: (p: Promise<unknown>) => void,
): Promise<DatabaseView> {
  const { def, version, envVar } = checked(input);
  requireSealer(env.sealer);
  const id = newId(env.now());
  const short = id.slice(-8);
  const secrets = def.newSecrets(() => randomBytes(24).toString('base64url'));
  const row: AppDatabaseTable = {
    id,
    app_id: app.id,
    engine: def.spec.engine,
    version,
    ...def.names(short),
    password_sealed: env.sealer.seal(JSON.stringify(secrets), dbBinding(id)),
    host: `${def.spec.engine}-${short}`,
    port: def.spec.port,
    env_var: envVar,
    container: `svc-${app.name}-db-${short}`,
    volume: volumeName(app.name, `db-${short}`),
    status: 'provisioning',
    error: null,
    created_at: new Date(env.now()).toISOString(),
  };
  const sealed = env.sealer.seal(connectionUrl(row, secrets.password), envBinding(app.id, envVar));
  if (!(await insertDatabase(env.db, row, { key: envVar, sealed })))
    throw conflict(`The app already has an env var "${envVar}"; pick another env_var`);
  background(provision(env, app, row, secrets));
  return toView(row);
}

export async function ensureAppNetwork(
  env: Pick<Services, 'engine' | 'config'>,
  appName: string,
): Promise<string> {
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

/** The database's volume, made (labelled as ours) unless it is there; refused when someone else's. */
async function ensureVolume(engine: Engine, appName: string, row: AppDatabaseTable): Promise<void> {
  try {
    const v = await engine.docker.getVolume(row.volume).inspect();
    if (!isOwned(engine, 'volume', v.Name, v.Labels))
      throw new EngineConflictError(`volume "${row.volume}" exists but was not made by this control plane`);
  } catch (e) {
    if (!isNotFound(e)) throw e;
    await engine.docker.createVolume({
      Name: row.volume,
      Labels: {
        ...ownerLabels(engine),
        [LABEL_APP]: appName,
        [LABEL_VOLUME]: row.volume.slice(`svc-${appName}_`.length),
        [LABEL_DATABASE]: row.id,
      },
    });
  }
}

/** Creates and starts the container of a database row; used by provisioning and by restores. */
export async function createDbContainer(
  env: Pick<Services, 'engine' | 'config'>,
  appName: string,
  row: AppDatabaseTable,
  secrets: Secrets,
): Promise<string> {
  const def = engineOf(row.engine);
  const image = imageOf(env.config, row);
  await ensureImage(env.engine, image);
  const network = await ensureAppNetwork(env, appName);
  const t = { container: row.container, name: row.name, username: row.username, ...secrets };
  return guard(env.engine, async () => {
    await ensureVolume(env.engine, appName, row);
    const created = await env.engine.docker.createContainer({
      name: row.container,
      Image: image,
      ...def.container(t, 'service'),
      Healthcheck: { Test: def.probe(t), Interval: 2e9, Timeout: 5e9, Retries: 60, StartPeriod: 120e9 },
      Labels: { ...ownerLabels(env.engine), [LABEL_DATABASE]: row.id, [LABEL_DATABASE_APP]: appName },
      HostConfig: {
        NetworkMode: network,
        // Never published: only the app's network reaches it.
        PortBindings: {},
        PublishAllPorts: false,
        RestartPolicy: { Name: 'unless-stopped' },
        Mounts: [{ Type: 'volume', Source: row.volume, Target: def.spec.dataPath }],
        SecurityOpt: ['no-new-privileges'],
      },
      NetworkingConfig: { EndpointsConfig: { [network]: { Aliases: [row.host] } } },
    });
    await created.start();
    return created.id;
  });
}

async function provision(
  env: ProvisionDeps,
  app: App,
  row: AppDatabaseTable,
  secrets: Secrets,
): Promise<void> {
  const published = async (status: 'ready' | 'error') =>
    env.bus.publish('apps', {
      type: 'database',
      app_id: app.id,
      database_id: row.id,
      status,
      ...(await previewScope(env.db, app.id).catch(() => ({}))),
    });
  try {
    await createDbContainer(env, app.name, row, secrets);
    await waitHealthy(env.engine, row.container);
    await setDatabaseStatus(env.db, row.id, 'ready', null);
    await published('ready');
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
    await setDatabaseStatus(env.db, row.id, 'error', message.slice(0, 500)).catch(() => {});
    await published('error');
  }
}

/** Provisioning that the process died during cannot finish: say so. */
export async function recoverDatabases(env: Pick<Services, 'db'>): Promise<void> {
  await failProvisioning(env.db, 'interrupted: the control plane stopped while provisioning');
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
  env: Pick<Services, 'db' | 'engine'>,
  appId: string | null,
  withSizes: boolean,
): Promise<DatabaseView[]> {
  const rows = await databaseRows(env.db, appId);
  const sizes = withSizes && rows.length ? await volumeSizes(env.engine) : new Map<string, number>();
  return rows.map((r) => {
    const s = sizes.get(r.volume);
    return toView(r, s === undefined || s < 0 ? null : s);
  });
}

/** Removes the container, the volume unless kept, the env var it set, and the row. */
export async function deleteDatabase(
  env: Pick<Services, 'db' | 'engine'>,
  appId: string,
  id: string,
  keepData: boolean,
): Promise<{ kept_volume: string | null }> {
  const row = await getDatabaseRow(env.db, appId, id);
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
  await deleteDatabaseRow(env.db, row);
  return { kept_volume: keepData ? row.volume : null };
}
