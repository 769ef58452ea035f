// The join command: one shell line a new Debian host runs as root to trust the cluster registry,
// log its engine in to it (the registry refuses anonymous pulls) and join the swarm as a worker. It embeds the swarm's worker join token, so it expires: the token
// is rotated when its recorded expiry passes (a periodic sweep, and lazily at each join and list),
// and an old command then no longer joins.
//
// The line is built from validated parts, each single-quoted; no operator string reaches it.
import type { Services } from '../http/handler.js';
import { guard } from '../docker/engine.js';
import { unavailable } from '../http/errors.js';
import { readSetting, writeSetting } from '../db/settings-store.js';
import { clusterRegistry, ENGINE_CERTS_DIR, registryCa, registryCredentials } from './registry.js';
import { swarmNodes } from './nodes.js';

/** settings row: the ISO expiry of the worker token handed out, or FRESH for one nobody has seen. */
const JOIN_SETTING = 'cluster_join_expires_at';
const FRESH = 'fresh';

const TOKEN = /^SWMTKN-1-[a-z0-9]+-[a-z0-9]+$/;
const HOST_PORT = /^([A-Za-z0-9.-]+|\[[0-9a-fA-F:.]+\]):\d{1,5}$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** Single quotes around a part already checked against a narrow pattern (belt and braces). */
function q(part: string, pattern: RegExp, what: string): string {
  if (!pattern.test(part) || part.includes("'"))
    throw new Error(`refusing to put an unexpected ${what} in a command`);
  return `'${part}'`;
}

/** The command line, from parts each checked here. Exported for the unit test of its shape. */
export function joinCommand(parts: {
  token: string;
  manager: string;
  registry: string | null;
  caPem: string | null;
  /** The own registry's account: the new node's engine logs in with it. */
  login?: { username: string; password: string } | null;
}): string {
  const steps: string[] = [];
  if (parts.registry && parts.caPem) {
    const dir = `${ENGINE_CERTS_DIR}/${parts.registry}`;
    const b64 = Buffer.from(parts.caPem, 'utf8').toString('base64');
    const path = (p: string) => q(p, /^\/etc\/docker\/certs\.d\/[A-Za-z0-9.:[\]-]+(\/ca\.crt)?$/, 'path');
    steps.push(`mkdir -p ${path(dir)}`);
    steps.push(`printf %s ${q(b64, BASE64, 'certificate')} | base64 -d > ${path(`${dir}/ca.crt`)}`);
  }
  if (parts.registry && parts.login) {
    const secret = Buffer.from(parts.login.password, 'utf8').toString('base64');
    steps.push(
      `printf %s ${q(secret, BASE64, 'password')} | base64 -d | docker login --username ${q(parts.login.username, /^[a-z][a-z0-9-]{0,31}$/, 'username')} --password-stdin ${q(parts.registry, HOST_PORT, 'registry')}`,
    );
  }
  steps.push(
    `docker swarm join --token ${q(parts.token, TOKEN, 'token')} ` +
      q(parts.manager, HOST_PORT, 'manager address'),
  );
  return steps.join(' && ');
}

let chain: Promise<unknown> = Promise.resolve();
/** One token change at a time in this process (a join racing the sweep would rotate twice). */
function serial<T>(fn: () => Promise<T>): Promise<T> {
  const next = chain.then(fn, fn);
  chain = next.catch(() => undefined);
  return next;
}

const readState = (env: Services): Promise<string | null> => readSetting(env.db, JOIN_SETTING);

const writeState = (env: Services, value: string): Promise<void> => writeSetting(env.db, JOIN_SETTING, value);

interface SwarmInfo {
  Version: { Index: number };
  Spec: Record<string, unknown>;
  JoinTokens: { Worker: string; Manager: string };
}

async function inspectSwarm(env: Services): Promise<SwarmInfo> {
  return (await guard(env.engine, () => env.engine.docker.swarmInspect())) as SwarmInfo;
}

async function rotateWorkerToken(env: Services): Promise<void> {
  const s = await inspectSwarm(env);
  await guard(env.engine, () =>
    env.engine.docker.swarmUpdate({
      _query: { version: s.Version.Index, rotateWorkerToken: true },
      _body: s.Spec,
    }),
  );
  env.log.info('rotated the swarm worker join token');
}

/** Rotates the worker token when the one handed out has expired. Safe to call often. */
export function expireJoinToken(env: Services): Promise<boolean> {
  return serial(async () => {
    const state = await readState(env);
    if (state === null || state === FRESH || Date.parse(state) > env.now()) return false;
    await rotateWorkerToken(env);
    await writeState(env, FRESH);
    return true;
  });
}

/**
 * A join command and when it stops working. Commands handed out close together share a token and
 * its expiry; with less than a quarter of the lifetime left, the token is rotated (the older
 * commands end early) so that a new command always has most of its lifetime ahead.
 */
export async function makeJoinCommand(env: Services): Promise<{ command: string; expires_at: string }> {
  const registry = await clusterRegistry(env);
  const caPem = await registryCa(env);
  // Only the own registry (its CA is ours): an operator's SVC_REGISTRY is theirs to give access to.
  const login = caPem ? await registryCredentials(env) : null;
  const managers = (await swarmNodes(env)).filter((n) => n.ManagerStatus?.Addr);
  const leader = managers.find((n) => n.ManagerStatus?.Leader) ?? managers[0];
  if (!leader) throw unavailable('the swarm has no manager address to join');
  const ttl = env.config.cluster.joinTtlSeconds * 1000;
  const expiresAt = await serial(async () => {
    const state = await readState(env);
    const now = env.now();
    if (state !== null && state !== FRESH && Date.parse(state) - now > ttl / 4) return state;
    // Unknown state (never handed out, or by someone else: `docker swarm init` prints it) or
    // nearly expired: a new token first.
    if (state !== FRESH) await rotateWorkerToken(env);
    const at = new Date(now + ttl).toISOString();
    await writeState(env, at);
    return at;
  });
  const token = (await inspectSwarm(env)).JoinTokens.Worker;
  return {
    command: joinCommand({
      token,
      manager: leader.ManagerStatus!.Addr!,
      registry: caPem ? registry : null,
      caPem,
      login,
    }),
    expires_at: expiresAt,
  };
}

/** The periodic sweep, started with the other background jobs in cluster mode. */
export function startJoinTokenSweep(env: Services): () => void {
  const every = Math.min(60_000, Math.max(2_000, (env.config.cluster.joinTtlSeconds * 1000) / 5));
  const timer = setInterval(() => {
    void expireJoinToken(env).catch((err) =>
      env.log.warn({ err: String(err) }, 'join token rotation failed'),
    );
  }, every);
  timer.unref();
  return () => clearInterval(timer);
}
