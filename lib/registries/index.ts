// Registry credentials: stored with the password sealed (bound to the row), checked against the
// self-hosted guard when saved and again whenever they are used, handed to the engine by host.
import type { Services } from '../http/handler.js';
import { requireSealer } from '../crypto/seal.js';
import { newId } from '../crypto/random.js';
import { nowIso } from '../db/index.js';
import { badRequest } from '../http/errors.js';
import { HostUnresolved, OutboundRefused, type SelfHostedPolicy } from '../net/self-hosted.js';
import type { RegistryCredentials, RegistryLogin } from '../docker/credentials.js';
import { canonicalHost, registryOfReference, ruleFor } from './hosts/index.js';
import { registryBinding, toRegistry, type Registry } from './model.js';
import { checkRegistryHost, registryPolicy } from './policy.js';
import { testLogin, type LoginResult } from './login.js';
import {
  deleteRegistryRow,
  findRegistryByHost,
  getRegistryRow,
  insertRegistryRow,
  listRegistryRows,
  touchRegistry,
  updateRegistryRow,
} from './store.js';

export type { Registry, LoginResult };
export { registryPolicy };

type Deps = Pick<Services, 'db' | 'sealer' | 'config' | 'now'>;

export interface RegistryInput {
  host: string;
  username: string;
  password: string;
}

/**
 * The save-time check: a host the guard refuses is a 400 naming the reason. One that does not
 * resolve from here is stored (the engine's resolver may know it); every use checks it again.
 */
async function admitHost(host: string, policy: SelfHostedPolicy): Promise<void> {
  try {
    await checkRegistryHost(host, policy);
  } catch (e) {
    if (e instanceof HostUnresolved) return;
    if (!(e instanceof OutboundRefused)) throw e;
    throw badRequest(`Registry host refused: ${e.reason}`, [{ field: 'host', message: e.reason }]);
  }
}

export async function listRegistries(deps: Pick<Services, 'db'>): Promise<Registry[]> {
  return (await listRegistryRows(deps.db)).map(toRegistry);
}

export async function getRegistry(deps: Pick<Services, 'db'>, id: string): Promise<Registry> {
  return toRegistry(await getRegistryRow(deps.db, id));
}

export async function createRegistry(deps: Deps, input: RegistryInput): Promise<Registry> {
  requireSealer(deps.sealer);
  const host = canonicalHost(input.host);
  await admitHost(host, registryPolicy(deps.config));
  const id = newId(deps.now());
  const at = nowIso(deps.now());
  await insertRegistryRow(deps.db, {
    id,
    host,
    username: input.username,
    password_sealed: deps.sealer.seal(input.password, registryBinding(id)),
    created_at: at,
    updated_at: at,
    last_used_at: null,
  });
  return getRegistry(deps, id);
}

export async function updateRegistry(
  deps: Deps,
  id: string,
  patch: Partial<RegistryInput>,
): Promise<Registry> {
  const current = await getRegistryRow(deps.db, id);
  const host = patch.host === undefined ? undefined : canonicalHost(patch.host);
  if (host !== undefined && host !== current.host) await admitHost(host, registryPolicy(deps.config));
  if (patch.password !== undefined) requireSealer(deps.sealer);
  await updateRegistryRow(deps.db, id, {
    ...(host !== undefined ? { host } : {}),
    ...(patch.username !== undefined ? { username: patch.username } : {}),
    ...(patch.password !== undefined
      ? { password_sealed: deps.sealer.seal(patch.password, registryBinding(id)) }
      : {}),
    updated_at: nowIso(deps.now()),
  });
  return getRegistry(deps, id);
}

export async function deleteRegistry(deps: Pick<Services, 'db'>, id: string): Promise<void> {
  await deleteRegistryRow(deps.db, id);
}

/** `POST /api/registries/{id}/test`: a login against `/v2/` with the stored credentials. */
export async function testRegistry(deps: Deps, id: string): Promise<LoginResult> {
  const row = await getRegistryRow(deps.db, id);
  requireSealer(deps.sealer);
  const password = deps.sealer.open(row.password_sealed, registryBinding(row.id));
  const result = await testLogin(
    { host: row.host, username: row.username, password },
    registryPolicy(deps.config),
  );
  if (result.ok) await touchRegistry(deps.db, row.id, nowIso(deps.now()));
  return result;
}

/**
 * The credential store the engine handle carries (runtime/boot.ts): the guard's verdict on a
 * reference's registry host before the engine is sent there, and the login stored for that host.
 */
export function registryCredentials(deps: Deps): RegistryCredentials {
  return {
    async admit(ref: string): Promise<void> {
      const host = registryOfReference(ref);
      try {
        await checkRegistryHost(host, registryPolicy(deps.config));
      } catch (e) {
        // Nothing to judge: the engine's own lookup fails the same way and says so in its error.
        if (e instanceof HostUnresolved) return;
        if (e instanceof OutboundRefused) throw new RegistryRefused(host, e.reason);
        throw e;
      }
    },
    async forReference(ref: string): Promise<RegistryLogin | null> {
      const host = registryOfReference(ref);
      const row = await findRegistryByHost(deps.db, host);
      if (!row || !deps.sealer.available) return null;
      const rule = ruleFor(host);
      return {
        id: row.id,
        host: row.host,
        serverAddress: rule.serverAddress(host),
        username: row.username,
        password: deps.sealer.open(row.password_sealed, registryBinding(row.id)),
      };
    },
    async used(id: string): Promise<void> {
      await touchRegistry(deps.db, id, nowIso(deps.now()));
    },
  };
}

/** A pull the guard refuses: the registry's host resolves where the control plane never sends the engine. */
export class RegistryRefused extends Error {
  constructor(
    readonly registry: string,
    readonly reason: string,
  ) {
    super(`registry ${registry}: ${reason}`);
    this.name = 'RegistryRefused';
  }
}
