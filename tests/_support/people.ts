// The people of the permission tests, made directly in the database (no invitation, no password:
// the hash is a placeholder nobody signs in with): an operator of a role, limited to apps or not,
// with a session and an API token, stepped up when a test needs it. They work the same against an
// in-process app (tests/_support/request.ts) and a real server (tests/_support/server.ts).
import assert from 'node:assert/strict';
import type { Services } from '#lib/http/handler.js';
import { insertUser } from '#lib/auth/users-store.js';
import { csrfFor } from '#lib/auth/sessions.js';
import { createSession } from '#lib/auth/sessions-store.js';
import { createApiToken, type TokenGrant } from '#lib/auth/tokens.js';
import { invalidateCredentials } from '#lib/auth/cache.js';
import type { Role } from '#lib/auth/roles.js';
import { Client } from './server.js';

/** An id of the right shape that names nothing. */
export const FAKE_ID = '01aaaaaaaaaaaaaaaaaaaaaaaa';

const LIMITS = { idleSeconds: 3600, maxSeconds: 3600 };

export interface Operator {
  id: string;
  /** A session: its cookie and CSRF cookie. */
  client: Client;
  /** An API token of every scope the role holds, named `<name>-token`. */
  token: string;
  cookie: string;
}

export interface People {
  operator(
    name: string,
    role: Role,
    appIds?: string[] | null,
    opts?: { stepUp?: boolean },
  ): Promise<Operator>;
  /** A new session of the operator. */
  sessionOf(userId: string): Promise<Client>;
  /** A bearer client for a new token of the operator (its `bearer` is the token). */
  tokenOf(userId: string, grant?: TokenGrant, opts?: { stepUp?: boolean }): Promise<Client>;
  bearer(token: string): Client;
  /** A fresh step-up for every session and token of the operator. */
  stepUp(userId: string): Promise<void>;
  /** Changes the operator's row as operator management would (the cache is all it also clears). */
  setRow(id: string, fields: { role?: string; app_ids?: string | null; disabled?: number }): Promise<void>;
}

export function people(s: { env: Services; url: string }): People {
  const db = s.env.db;
  let tokens = 0;
  const bearer = (token: string) => Object.assign(new Client(s.url), { bearer: token });

  async function stepUp(userId: string): Promise<void> {
    const until = new Date(Date.now() + 120_000).toISOString();
    await db.updateTable('sessions').set({ step_up_until: until }).where('user_id', '=', userId).execute();
    await db.updateTable('api_tokens').set({ step_up_until: until }).where('user_id', '=', userId).execute();
    invalidateCredentials();
  }

  async function sessionOf(userId: string): Promise<Client> {
    const session = await createSession(db, userId, { ip: null, userAgent: null }, LIMITS);
    const client = new Client(s.url);
    client.cookies.set('svc_session', session.raw);
    client.cookies.set('svc_csrf', csrfFor(s.env.signingKey, session.raw));
    return client;
  }

  return {
    bearer,
    stepUp,
    sessionOf,
    async operator(name, role, appIds = null, opts = {}) {
      const user = await insertUser(db, name, 'scrypt$10$8$1$x$y', { role, appIds });
      const client = await sessionOf(user.id);
      const token = (await createApiToken(db, user.id, `${name}-token`, null)).token;
      if (opts.stepUp) await stepUp(user.id);
      return { id: user.id, client, token, cookie: client.cookieHeader() };
    },
    async tokenOf(userId, grant = { scopes: null, appIds: null }, opts = {}) {
      const t = await createApiToken(db, userId, `tok-${++tokens}`, null, Date.now(), grant);
      if (opts.stepUp) await stepUp(userId);
      invalidateCredentials();
      return bearer(t.token);
    },
    async setRow(id, fields) {
      await db.updateTable('users').set(fields).where('id', '=', id).execute();
      invalidateCredentials();
    },
  };
}

/** Two image apps made by `owner` through the API: their ids, in order. */
export async function twoApps(
  owner: Client,
  names: [string, string] = ['alpha', 'bravo'],
  image = 'nginx:alpine',
): Promise<[string, string]> {
  const ids: string[] = [];
  for (const name of names) {
    const r = await owner.req('POST', '/api/apps', { name, source: { type: 'image', image } });
    assert.equal(r.status, 201, r.text);
    ids.push(r.body.app.id);
  }
  return ids as [string, string];
}

export const INVITE_LINK = /\/invite\/([A-Za-z0-9_-]{43})$/;

/** The token of an invitation or reset link. */
export const linkToken = (url: string) => INVITE_LINK.exec(url)![1]!;

/** An invitation made by `by` through the API (201 asserted): its id, link and the link's token. */
export async function invite(
  by: Client,
  body: Record<string, unknown>,
): Promise<{ id: string; token: string; url: string }> {
  const r = await by.req('POST', '/api/operators/invitations', body);
  assert.equal(r.status, 201, r.text);
  return { id: r.body.invitation.id, token: linkToken(r.body.invitation.url), url: r.body.invitation.url };
}

/** A domain of an app's service `web` on port 80, asked for through the API (the answer as is). */
export const postDomain = (by: Client, hostname: string, appId: string) =>
  by.req('POST', '/api/domains', { hostname, app_id: appId, service: 'web', port: 80 });

/** A domain row of an app, written directly: no proxy, no host check, for what only reads it. */
export async function insertDomainRow(
  env: Services,
  id: string,
  hostname: string,
  appId: string,
): Promise<void> {
  const now = new Date().toISOString();
  await env.db
    .insertInto('domains')
    .values({
      id,
      hostname,
      app_id: appId,
      service: 'web',
      port: 80,
      redirect_to: null,
      created_at: now,
      updated_at: now,
    })
    .execute();
}
