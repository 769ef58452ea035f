// What the host's break-glass commands (`svc operators ...`, runtime/operators-cli.ts) do to the
// operators, straight on the database: they work when nobody can sign in, and every change is
// audited as the system actor `cli`.
import type { Db } from '../db/index.js';
import { nowIso } from '../db/index.js';
import { recordAudit } from '../audit/index.js';
import { invalidateCredentials } from './cache.js';
import { usernameKey } from './users.js';
import { appNames, dropSecondFactor, operatorRows } from './operators-store.js';

export const CLI_ACTOR = { actorType: 'system', actor: 'cli', via: 'cli' } as const;

export interface HostOperator {
  id: string;
  username: string;
  role: string;
  /** null: every app. */
  app_ids: string[] | null;
  /** The names of those apps, in the same order (the id when the app is gone). */
  app_names: string[] | null;
  disabled: boolean;
  totp_enabled: boolean;
  sso: boolean;
  created_at: string;
  last_login_at: string | null;
}

export async function listHostOperators(db: Db): Promise<HostOperator[]> {
  const rows = await operatorRows(db);
  const apps = new Map((await appNames(db)).map((a) => [a.id, a.name]));
  return rows.map((r) => {
    const ids = r.app_ids === null ? null : (JSON.parse(r.app_ids) as string[]);
    return {
      id: r.id,
      username: r.username,
      role: r.role,
      app_ids: ids,
      app_names: ids && ids.map((id) => apps.get(id) ?? id),
      disabled: r.disabled === 1,
      totp_enabled: r.totp_enabled === 1,
      sso: r.sso_subject !== null,
      created_at: r.created_at,
      last_login_at: r.last_login_at,
    };
  });
}

export class NoSuchOperator extends Error {}

/**
 * Turns off an operator's second factor (secret, pending secret, recovery codes) and ends their
 * sessions, in one transaction: whoever holds a session opened with the lost device is out too.
 * A running service notices within its credential cache's few seconds. Answers how many sessions ended.
 */
export async function disableOperatorTotp(
  db: Db,
  username: string,
  now = Date.now(),
): Promise<{ id: string; sessions: number; hadTotp: boolean }> {
  const done = await dropSecondFactor(db, usernameKey(username), nowIso(now));
  if (!done) throw new NoSuchOperator(`no operator is named ${username}`);
  invalidateCredentials();
  await recordAudit(db, {
    ...CLI_ACTOR,
    route: 'CLI /operators/{id}/totp',
    event: 'operator.totp_disabled',
    summary: 'Two-factor sign-in turned off from the host (svc operators disable-totp)',
    target: done.id,
    outcome: 200,
    detail: { username, sessions_ended: done.sessions, had_totp: done.hadTotp },
  });
  return done;
}
