// The one way an image reaches the engine from a registry. Every caller (image and compose apps,
// build bases, databases, add-ons, previews, the cluster's own containers) comes here: the stored
// credentials of the reference's registry are given to the engine (X-Registry-Auth), progress is
// reported at most once per layer and state change, and a failure says which registry refused
// and why, never with the password in it.
import type { Engine } from './engine.js';
import { guard, isConnectError, isNotFound, StackError } from './engine.js';
import { parseReference } from './reference.js';
import type { RegistryLogin } from './credentials.js';

export type { RegistryCredentials, RegistryLogin } from './credentials.js';

export const PULL_POLICIES = ['if_missing', 'always'] as const;
export type PullPolicy = (typeof PULL_POLICIES)[number];

export interface PullOptions {
  /** `if_missing` (default): nothing happens when the engine has the reference. */
  policy?: PullPolicy;
  /** One line per layer and state change (never one per byte). */
  log?: (line: string) => void;
  signal?: AbortSignal;
  platform?: string | null;
}

export type PullFailure = 'auth' | 'not_found' | 'unreachable' | 'other';

/** A pull that failed with a reason safe to show: it names the registry, never a password. */
export class PullError extends StackError {
  constructor(
    message: string,
    readonly kind: PullFailure,
    readonly registry: string,
  ) {
    super(message);
    this.name = 'PullError';
  }
}

interface ProgressEvent {
  id?: string;
  status?: string;
  progressDetail?: { current?: number; total?: number };
  error?: string;
  errorDetail?: { message?: string };
}

/** Whether the engine already has the reference (by tag, digest or image id). */
export async function hasImage(engine: Engine, ref: string): Promise<boolean> {
  return guard(engine, async () => {
    try {
      await engine.docker.getImage(ref).inspect();
      return true;
    } catch (e) {
      if (isNotFound(e)) return false;
      throw e;
    }
  });
}

/**
 * The image `ref` on the engine, pulled with the credentials of its registry when it is missing
 * (or always, with `policy: 'always'`). Answers whether a pull ran.
 */
export async function pullImage(engine: Engine, ref: string, opts: PullOptions = {}): Promise<boolean> {
  if ((opts.policy ?? 'if_missing') === 'if_missing' && !opts.platform && (await hasImage(engine, ref)))
    return false;
  opts.signal?.throwIfAborted();
  await engine.credentials?.admit(ref);
  const login = (await engine.credentials?.forReference(ref)) ?? null;
  const registry = parseReference(ref).registry;
  const log = opts.log ?? (() => {});
  log(`pulling ${ref}${login ? ` with the stored credentials of ${login.host}` : ''}`);
  try {
    await guard(engine, async () => {
      const stream = await engine.docker.pull(ref, {
        ...(login
          ? {
              authconfig: {
                username: login.username,
                password: login.password,
                serveraddress: login.serverAddress,
              },
            }
          : {}),
        ...(opts.platform ? { platform: opts.platform } : {}),
        ...(opts.signal ? { abortSignal: opts.signal } : {}),
      });
      await followPull(engine, stream, progressReporter(log));
    });
  } catch (e) {
    if (isConnectError(e) || opts.signal?.aborted) throw e;
    throw pullFailure(e, ref, registry, login);
  } finally {
    if (login) await engine.credentials?.used(login.id).catch(() => {});
  }
  return true;
}

/**
 * X-Registry-Auth for a swarm service running `ref`: the nodes pull it with the stored login of its
 * registry (the engine keeps it with the service, never in what inspecting the service shows).
 */
export async function serviceAuth(
  engine: Engine,
  ref: string,
): Promise<{ username: string; password: string; serveraddress: string } | Record<string, never>> {
  const login = (await engine.credentials?.forReference(ref)) ?? null;
  return login
    ? { username: login.username, password: login.password, serveraddress: login.serverAddress }
    : {};
}

/** ensureImage: the reference present, pulled when it is not (the databases' and edge's form). */
export async function ensureImage(engine: Engine, ref: string, log?: (line: string) => void): Promise<void> {
  await pullImage(engine, ref, { log });
}

function followPull(
  engine: Engine,
  stream: NodeJS.ReadableStream,
  onEvent: (e: ProgressEvent) => void,
): Promise<void> {
  return new Promise<void>((resolve, reject) =>
    engine.docker.modem.followProgress(
      stream,
      (err: Error | null, events: ProgressEvent[]) => {
        const failed = events?.find((e) => e.error || e.errorDetail);
        if (err) reject(err);
        else if (failed) reject(new Error(failed.errorDetail?.message ?? failed.error ?? 'pull failed'));
        else resolve();
      },
      onEvent,
    ),
  );
}

const MB = 1024 * 1024;

/**
 * Turns the engine's progress events into lines: a layer's line is written when its state
 * changes (`Pulling fs layer` -> `Downloading` -> `Download complete` -> `Extracting` ->
 * `Pull complete`), never for the byte counts in between; events without a layer are written once.
 */
export function progressReporter(log: (line: string) => void): (e: ProgressEvent) => void {
  const state = new Map<string, string>();
  const seen = new Set<string>();
  return (e) => {
    if (e.error || e.errorDetail || !e.status) return;
    const status = e.status.trim();
    if (!e.id || /^Pulling from /.test(status)) {
      if (seen.has(status)) return;
      seen.add(status);
      log(e.id ? `${status} (${e.id})` : status);
      return;
    }
    if (state.get(e.id) === status) return;
    // A layer's state count is bounded: the map never grows beyond the image's layers.
    state.set(e.id, status);
    const total = e.progressDetail?.total;
    const size = total && /^(Downloading|Extracting)$/.test(status) ? ` (${(total / MB).toFixed(1)} MB)` : '';
    log(`layer ${e.id}: ${status}${size}`);
  };
}

const AUTH_WORDS =
  /no basic auth credentials|unauthorized|authentication required|incorrect username or password|denied:|access denied|401/i;
const NOT_FOUND_WORDS = /manifest unknown|not found|name unknown|404/i;
const UNREACHABLE_WORDS =
  /connection refused|no such host|i\/o timeout|dial tcp|tls:|x509:|server gave HTTP response/i;

/** A readable failure that names the registry and never carries the password. */
export function pullFailure(
  e: unknown,
  ref: string,
  registry: string,
  login: RegistryLogin | null,
): PullError {
  let raw = ((e as Error)?.message ?? String(e)).replace(/^\(HTTP code \d+\) [a-z ]+ - /, '').trim();
  raw = raw.split('\n')[0]!.slice(0, 400);
  if (login?.password) raw = raw.split(login.password).join('***');
  const status = (e as { statusCode?: number }).statusCode;
  if (AUTH_WORDS.test(raw) && status !== 404)
    return new PullError(
      login
        ? `registry ${registry}: authentication failed: the stored credentials (user ${login.username}) were refused for ${ref}`
        : `registry ${registry}: authentication failed: no credentials are stored for this registry (add them under registries) to pull ${ref}`,
      'auth',
      registry,
    );
  if (status === 404 || NOT_FOUND_WORDS.test(raw))
    return new PullError(`image ${ref} not found in registry ${registry}: ${raw}`, 'not_found', registry);
  if (UNREACHABLE_WORDS.test(raw))
    return new PullError(
      `registry ${registry} could not be reached to pull ${ref}: ${raw}`,
      'unreachable',
      registry,
    );
  return new PullError(`pulling ${ref} from registry ${registry} failed: ${raw}`, 'other', registry);
}
