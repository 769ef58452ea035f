// One ed25519 deploy key per app: the private half sealed, the public half shown to paste
// into the forge. git uses it through GIT_SSH_COMMAND with a per-app known_hosts file.
import { dirname, join } from 'node:path';
import { mkdir, rm } from 'node:fs/promises';
import type { Db } from '../db/index.js';
import { nowIso } from '../db/index.js';
import { requireSealer, type Sealer } from '../crypto/seal.js';
import type { App, GitAuth } from '../apps/model.js';
import { withDeployKey, anonymousSshCommand, testConnection, type ConnectionResult } from '../git/ssh.js';
import { badRequest, notFound } from '../http/errors.js';
import { generateDeployKey } from './ssh.js';

export const keyBinding = (appId: string) => `app:${appId}:ssh-key`;

export interface PublicKeyView {
  public_key: string;
  fingerprint: string;
  created_at: string;
}

export function knownHostsFile(dataDir: string, appId: string): string {
  return join(dataDir, 'ssh', appId, 'known_hosts');
}

export async function getPublicKey(db: Db, appId: string): Promise<PublicKeyView | null> {
  const row = await db
    .selectFrom('app_ssh_keys')
    .select(['public_key', 'fingerprint', 'created_at'])
    .where('app_id', '=', appId)
    .executeTakeFirst();
  return row ?? null;
}

/** Generates (or replaces) the app's key; the old key stops working at once. */
export async function regenerateKey(
  db: Db,
  sealer: Sealer,
  app: App,
  now = Date.now(),
): Promise<PublicKeyView> {
  requireSealer(sealer);
  const k = generateDeployKey(`svc-${app.name}`);
  const row = {
    app_id: app.id,
    public_key: k.publicKey,
    fingerprint: k.fingerprint,
    private_sealed: sealer.seal(k.privateKey, keyBinding(app.id)),
    created_at: nowIso(now),
  };
  await db
    .insertInto('app_ssh_keys')
    .values(row)
    .onConflict((c) =>
      c.column('app_id').doUpdateSet({
        public_key: row.public_key,
        fingerprint: row.fingerprint,
        private_sealed: row.private_sealed,
        created_at: row.created_at,
      }),
    )
    .execute();
  return { public_key: row.public_key, fingerprint: row.fingerprint, created_at: row.created_at };
}

export async function deleteKey(db: Db, dataDir: string, appId: string): Promise<boolean> {
  const r = await db.deleteFrom('app_ssh_keys').where('app_id', '=', appId).executeTakeFirst();
  await rm(join(dataDir, 'ssh', appId), { recursive: true, force: true });
  return Number(r.numDeletedRows) > 0;
}

export async function privateKey(db: Db, sealer: Sealer, appId: string): Promise<string | null> {
  const row = await db
    .selectFrom('app_ssh_keys')
    .select('private_sealed')
    .where('app_id', '=', appId)
    .executeTakeFirst();
  if (!row) return null;
  return sealer.open(row.private_sealed, keyBinding(appId));
}

/**
 * git runs with the app's key when it has one; the key file exists only for that run. Without
 * one, ssh offers no key at all (not the service user's) and still pins the app's host keys.
 */
export function deployKeyGitAuth(db: Db, sealer: Sealer, dataDir: string): GitAuth {
  return async (app, fn) => {
    // A preview clones its app's repository (or a fork of it) with the app's key and known hosts.
    const row = await db
      .selectFrom('apps')
      .select('parent_app_id')
      .where('id', '=', app.id)
      .executeTakeFirst();
    const owner = row?.parent_app_id ?? app.id;
    const known = knownHostsFile(dataDir, owner);
    const key = await privateKey(db, sealer, owner);
    if (key) return withDeployKey(key, known, (env) => fn(env));
    let command: string;
    try {
      command = anonymousSshCommand(known);
    } catch {
      // A data directory path ssh cannot take: gitEnv's default (the same options, a private known_hosts).
      return fn({});
    }
    await mkdir(dirname(known), { recursive: true, mode: 0o700 });
    return fn({ GIT_SSH_COMMAND: command, GIT_SSH_VARIANT: 'ssh' });
  };
}

/** `git ls-remote` with the app's key against its repository (400 for an image app, 404 without a key). */
export async function testDeployKey(
  deps: { db: Db; sealer: Sealer; config: { dataDir: string } },
  app: App,
): Promise<ConnectionResult> {
  if (app.source.type !== 'git')
    throw badRequest('Only git apps have a repository to connect to', [
      { field: 'source.type', message: 'not git' },
    ]);
  const key = await privateKey(deps.db, deps.sealer, app.id);
  if (!key) throw notFound('This app has no deploy key: POST /api/apps/{id}/ssh-key/regenerate creates one');
  return testConnection({
    url: app.source.repo_url,
    privateKey: key,
    knownHostsFile: knownHostsFile(deps.config.dataDir, app.id),
  });
}
