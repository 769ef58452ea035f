// The handle every engine function takes first. Errors that mean "no engine to talk to"
// become EngineUnavailableError (naming the socket) so the HTTP layer can answer 503.
import { createRequire } from 'node:module';
import type Docker from 'dockerode';
import { freshOwner, type Owner } from './owner.js';
import type { RegistryCredentials } from './credentials.js';

// ctx.env of every handler carries it (the service registry of lib/http/handler.ts).
declare module '../http/handler.js' {
  interface Services {
    /** The Docker engine (dockerode); unreachable engines surface as 503 naming the socket. */
    engine: Engine;
  }
}

export interface Engine {
  readonly docker: Docker;
  readonly socketPath: string;
  /** Which objects on the engine are this control plane's (lib/docker/owner.ts). */
  owner: Owner;
  /** The stored registry credentials every pull, build and swarm service uses (lib/docker/pull.ts). */
  credentials?: RegistryCredentials;
}

const requireCjs = createRequire(import.meta.url);

/** `owner`: the instance's (runtime/boot.ts); by default a fresh one owning nothing yet. */
export function createEngine(
  opts: { socketPath?: string; timeoutMs?: number; owner?: Owner; credentials?: RegistryCredentials } = {},
): Engine {
  const socketPath = opts.socketPath ?? '/var/run/docker.sock';
  let client: Docker | undefined;
  return {
    socketPath,
    owner: opts.owner ?? freshOwner(),
    ...(opts.credentials ? { credentials: opts.credentials } : {}),
    // dockerode (with its SSH and gRPC dependencies) is loaded on first use, not at boot: a
    // control plane that is only asked for its health never pays for it.
    get docker(): Docker {
      if (!client) {
        const DockerClass = requireCjs('dockerode') as typeof Docker;
        // No global timeout: event streams, builds and log follows are long-lived by design.
        client = new DockerClass({ socketPath, ...(opts.timeoutMs ? { timeout: opts.timeoutMs } : {}) });
      }
      return client;
    },
  };
}

export class EngineUnavailableError extends Error {
  readonly code = 'service_unavailable';
  constructor(
    readonly socketPath: string,
    cause?: unknown,
  ) {
    super(
      `Docker engine unavailable at unix://${socketPath}${cause instanceof Error && 'code' in cause ? ` (${String((cause as NodeJS.ErrnoException).code)})` : ''}`,
      { cause },
    );
    this.name = 'EngineUnavailableError';
  }
}

/** A state conflict the caller should report as 409 (name taken by something we don't own...). */
export class EngineConflictError extends Error {
  readonly code = 'conflict';
  constructor(message: string) {
    super(message);
    this.name = 'EngineConflictError';
  }
}

/** A failed stack operation with a readable reason (dependency unhealthy, image missing...). */
export class StackError extends Error {
  constructor(
    message: string,
    readonly service?: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'StackError';
  }
}

const CONNECT_CODES = new Set([
  'ENOENT',
  'ECONNREFUSED',
  'EACCES',
  'EPERM',
  'ECONNRESET',
  'ENOTSOCK',
  'EPIPE',
  'ETIMEDOUT',
]);

export function isConnectError(e: unknown): boolean {
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  return (
    typeof code === 'string' &&
    CONNECT_CODES.has(code) &&
    (e as { statusCode?: number }).statusCode === undefined
  );
}

export function mapEngineError(engine: Engine, e: unknown): unknown {
  return isConnectError(e) ? new EngineUnavailableError(engine.socketPath, e) : e;
}

/** Runs fn, translating connection failures into EngineUnavailableError. */
export async function guard<T>(engine: Engine, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    throw mapEngineError(engine, e);
  }
}

export function statusOf(e: unknown): number | undefined {
  return (e as { statusCode?: number } | undefined)?.statusCode;
}

export function isNotFound(e: unknown): boolean {
  return statusOf(e) === 404;
}

/** Pings the engine; throws EngineUnavailableError when it cannot be reached. */
export async function pingEngine(engine: Engine): Promise<void> {
  await guard(engine, () => engine.docker.ping());
}
