// What a managed database engine is. Each engine is one file beside this one (postgres.ts,
// mariadb.ts, redis.ts) holding everything about it: its pinned images and defaults, the names and
// secrets of a new database, its container's environment and health probe, and how its own
// clients dump, restore and verify a database. index.ts is the table everything else goes
// through: provisioning (../index.ts), backups and previews never ask which engine a row is.
import type { Readable } from 'node:stream';
import type { Container } from 'dockerode';
import type { Services } from '../../http/handler.js';
import type { AppDatabaseTable } from '../../db/schema.js';
import type { ExecHandle } from '../exec.js';
import type { DbEngine } from '../model.js';

export interface EngineSpec {
  engine: DbEngine;
  versions: string[];
  default_version: string;
  /** Version -> pinned official image (SVC_IMAGE_MAP may swap a reference for another). */
  images: Record<string, string>;
  port: number;
  /** Where the engine keeps its data in the container: the database's volume is mounted there. */
  dataPath: string;
  /** The app's variable that gets the connection URL unless the request names another. */
  defaultEnvVar: string;
}

/** A database's secrets (sealed in its row): its user's password, and root's when the engine needs it. */
export interface Secrets {
  password: string;
  root?: string;
}

/** What a client connects to: the container, the database's names, its secrets. */
export interface Target extends Secrets {
  container: string;
  name: string;
  username: string;
}

/** `service`: the database an app uses; `scratch`: a throwaway server a backup is verified in. */
export type Purpose = 'service' | 'scratch';

/** What the engines need of the services: Docker, and the data directory (a restore spools there). */
export type EngineDeps = Pick<Services, 'engine' | 'config'>;

/** A scratch server of the engine, created on no network and not started yet (scratch.ts). */
export interface ScratchServer {
  container: Container;
  target: Target;
  /** Starts it and waits until its probe says it is healthy. */
  start(): Promise<void>;
}

export interface DatabaseEngine {
  spec: EngineSpec;
  /** The database and user names of a new database; `short` is unique among the app's databases. */
  names(short: string): { name: string; username: string };
  /** The secrets of a new database; `random()` gives a fresh password each call. */
  newSecrets(random: () => string): Secrets;
  /** The URL the app is given (sealed in its variable). */
  connectionUrl(r: Pick<AppDatabaseTable, 'username' | 'host' | 'port' | 'name'>, password: string): string;
  /** The container's environment (passwords included) and command. */
  container(t: Target, purpose: Purpose): { Env: string[]; Cmd?: string[] };
  /** The health probe, the container's healthcheck test: it never names a password. */
  probe(t: Target): string[];
  /** The client a dump runs, as a failed backup names it. */
  dumpClient: string;
  /** The dump's byte stream; `done` says how the client exited. */
  dump(deps: EngineDeps, t: Target): Promise<ExecHandle>;
  /** Feeds the (decompressed) dump back into the database of `t`. */
  restore(deps: EngineDeps, t: Target, dump: () => Promise<Readable>): Promise<void>;
  /** Restores the dump into the scratch server and checks it: one line saying what it found. */
  verify(deps: EngineDeps, s: ScratchServer, dump: () => Promise<Readable>): Promise<string>;
}

/** Throws with the tail of the client's stderr when it did not exit with 0. */
export function failIfNonZero(what: string, r: { code: number; stderr: string }): void {
  if (r.code !== 0)
    throw new Error(
      `${what} exited with ${r.code}: ${r.stderr.trim().split('\n').slice(-3).join(' ').slice(0, 400)}`,
    );
}
