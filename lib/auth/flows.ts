// The authentication flows behind the auth and setup routes: each takes the services and the
// parsed input, does the checks and the writes, and tells the route what to answer.
import type { Services } from '../http/handler.js';
import type { Client, Principal } from '../http/handler.js';
import { HttpError, badRequest } from '../http/errors.js';
import { parseCookies, serializeCookie } from '../http/cookies.js';
import { Headers } from '../http/respond.js';
import { nowIso } from '../db/index.js';
import { publicUser, usernameKey, type PublicUser } from './users.js';
import {
  countUsers,
  findUser,
  findUserByName,
  insertUser,
  setPassword,
  setTotpPending,
} from './users-store.js';
import { dummyHash, hashPassword, verifyPassword } from './passwords.js';
import {
  consumeSecondFactor,
  enableTotp,
  newTotpSecret,
  otpauthUrl,
  replaceRecoveryCodes,
  totpBinding,
} from './totp.js';
import { startSession } from './login.js';
import { PRE_COOKIE, SESSION_COOKIE } from './principal.js';
import { resolveSession } from './sessions.js';
import { DEVICE_COOKIE, readDevice } from './guard.js';
import { PRE_AUTH_SECONDS, signPreAuth, verifyPreAuth } from './signing.js';
import { markStepUp } from './stepup.js';
import { checkSetupToken, closeSetup } from './setup.js';

export type LoginOutcome =
  | { kind: 'failed' }
  | { kind: 'second_factor'; headers: Headers }
  | { kind: 'session'; user: PublicUser; headers: Headers };

/**
 * Username and password. Unknown user and wrong password take the same path: one full scrypt
 * verification, one answer. A browser this operator logged in from before (or holding a live
 * session of theirs) is known: it skips the account lock and the strangers' hashing queue.
 */
export async function passwordLogin(
  env: Services,
  request: Request,
  client: Client,
  input: { username: string; password: string },
): Promise<LoginOutcome> {
  const now = env.now();
  const user = await findUserByName(env.db, input.username);
  const cookies = parseCookies(request.headers.get('cookie'));
  const device = readDevice(env.signingKey, cookies[DEVICE_COOKIE]);
  const knownDevice =
    user !== undefined &&
    device !== null &&
    device.userId === user.id &&
    env.loginGuard.deviceInGoodStanding(device, now);
  const limits = { idleSeconds: env.config.sessionIdleSeconds, maxSeconds: env.config.sessionMaxSeconds };
  const raw = cookies[SESSION_COOKIE];
  const liveSession =
    user !== undefined &&
    raw !== undefined &&
    (await resolveSession(env.db, raw, limits, now))?.user.id === user.id;
  const known = knownDevice || liveSession;
  // One account, one limit: `ADA` and `ada` are the same name (and the same counter).
  const account = usernameKey(input.username);
  env.loginGuard.admit(account, known, now);
  // An operator of the identity provider has no password: the same full verification, the same refusal.
  const sso = user !== undefined && user.sso_subject !== null;
  const hash = user && !sso ? user.password_hash : dummyHash(env.config.passwordCost);
  // A disabled operator takes the same path as a wrong password: the answer says nothing more.
  const ok =
    (await verifyPassword(input.password, hash, known ? 'priority' : 'normal')) &&
    user !== undefined &&
    !sso &&
    user.disabled === 0;
  if (!ok || !user) {
    if (env.loginGuard.failed(account, knownDevice ? device : null, now)) {
      env.log.warn(
        { username: input.username.slice(0, 64), ip: client.ip },
        'too many failed sign-ins: this account now answers 429 to unknown devices for a while',
      );
    }
    return { kind: 'failed' };
  }
  // A disabled operator's right password opens nothing; the answer is the same as a wrong one.
  if (user.disabled !== 0) return { kind: 'failed' };
  if (user.totp_enabled === 1) {
    const pre = await signPreAuth(env.signingKey, user.id, now);
    const headers = new Headers();
    headers.append(
      'set-cookie',
      serializeCookie(PRE_COOKIE, pre, { httpOnly: true, secure: client.secure, maxAge: PRE_AUTH_SECONDS }),
    );
    return { kind: 'second_factor', headers };
  }
  return {
    kind: 'session',
    user: publicUser(user),
    headers: await startSession(env, request, client, user.id),
  };
}

const noPendingLogin = () =>
  new HttpError('unauthorized', 'No pending login: sign in with username and password first');

/** The second step of a login with TOTP: the `svc_pre` cookie plus a TOTP or recovery code. */
export async function secondFactorLogin(
  env: Services,
  request: Request,
  client: Client,
  code: string,
): Promise<{ ok: false; user: PublicUser } | { ok: true; user: PublicUser; headers: Headers }> {
  const pre = parseCookies(request.headers.get('cookie'))[PRE_COOKIE];
  const userId = pre ? await verifyPreAuth(env.signingKey, pre, env.now()) : null;
  if (!userId) throw noPendingLogin();
  const user = await findUser(env.db, userId);
  if (!user || user.totp_enabled !== 1 || user.disabled !== 0) throw noPendingLogin();
  if (!(await consumeSecondFactor(env.db, env.sealer, user.id, code, env.now())))
    return { ok: false, user: publicUser(user) };
  return { ok: true, user: publicUser(user), headers: await startSession(env, request, client, user.id) };
}

const ssoHasNoPassword = () =>
  new HttpError(
    'forbidden',
    'This operator signs in with the identity provider and has no password: step up with a fresh sign-in there (GET /api/auth/oidc/start?step_up=1)',
  );

/** Proof of presence for the sensitive operations: the second factor when 2FA is on, else the password. */
export async function stepUp(
  env: Services,
  principal: Principal,
  input: { password?: string; code?: string },
): Promise<string> {
  const user = await findUser(env.db, principal.user.id);
  if (!user) throw new HttpError('unauthorized', 'Authentication required');
  let ok: boolean;
  if (user.totp_enabled === 1) {
    // With 2FA on, the second factor is what proves presence; a password alone would weaken it.
    if (!input.code)
      throw badRequest('A TOTP or recovery code is required when two-factor authentication is enabled', [
        { field: 'code', message: 'required' },
      ]);
    ok = await consumeSecondFactor(env.db, env.sealer, user.id, input.code, env.now());
  } else {
    if (user.sso_subject !== null) throw ssoHasNoPassword();
    if (!input.password)
      throw badRequest('password is required', [{ field: 'password', message: 'required' }]);
    // An authenticated operator: never queued behind strangers' login attempts.
    ok = await verifyPassword(input.password, user.password_hash, 'priority');
  }
  if (!ok) throw new HttpError('invalid_credentials', 'Verification failed');
  return markStepUp(env.db, principal, env.now());
}

/**
 * A new password for the caller. The current one proves it is them (a stolen session alone cannot
 * lock the operator out); every other session of theirs ends, so whoever knew the old password
 * is logged out. API tokens are separate credentials and stay until revoked.
 */
export async function changePassword(
  env: Services,
  principal: Principal,
  input: { current_password: string; new_password: string },
): Promise<void> {
  const user = await findUser(env.db, principal.user.id);
  if (!user) throw new HttpError('unauthorized', 'Authentication required');
  if (user.sso_subject !== null)
    throw new HttpError(
      'forbidden',
      'This operator signs in with the identity provider and has no password to change',
    );
  if (!(await verifyPassword(input.current_password, user.password_hash, 'priority')))
    throw new HttpError('invalid_credentials', 'The current password is wrong');
  if (input.new_password === input.current_password) {
    throw badRequest('The new password must differ from the current one', [
      { field: 'new_password', message: 'same as the current password' },
    ]);
  }
  const hash = await hashPassword(input.new_password, env.config.passwordCost);
  await setPassword(
    env.db,
    user.id,
    hash,
    principal.kind === 'session' ? principal.credentialId : null,
    env.now(),
  );
}

/** A new TOTP secret, kept sealed as pending until a code from it enables it. */
export async function beginTotpSetup(
  env: Services,
  userId: string,
): Promise<{ secret: string; otpauth_url: string }> {
  const user = await findUser(env.db, userId);
  if (!user) throw new HttpError('unauthorized', 'Authentication required');
  if (user.totp_enabled === 1)
    throw new HttpError('conflict', 'Two-factor authentication is already enabled; disable it first');
  const secret = await newTotpSecret();
  const sealed = env.sealer.seal(secret, totpBinding(user.id) + ':pending');
  await setTotpPending(env.db, user.id, sealed, nowIso(env.now()));
  return { secret, otpauth_url: await otpauthUrl(user.username, secret) };
}

/** Turns the pending secret on when the code matches it; answers the one-time recovery codes. */
export async function confirmTotp(env: Services, userId: string, code: string): Promise<string[]> {
  const user = await findUser(env.db, userId);
  if (!user) throw new HttpError('unauthorized', 'Authentication required');
  if (user.totp_enabled === 1)
    throw new HttpError('conflict', 'Two-factor authentication is already enabled');
  if (!user.totp_pending) throw new HttpError('conflict', 'Call POST /api/auth/totp/setup first');
  const codes = await enableTotp(env.db, env.sealer, user.id, user.totp_pending, code, env.now());
  if (!codes) throw new HttpError('invalid_credentials', 'The code does not match the new secret');
  return codes;
}

/** New recovery codes in place of the old ones (lost, or some used up); only with TOTP enabled. */
export async function regenerateRecoveryCodes(env: Services, userId: string): Promise<string[]> {
  const codes = await replaceRecoveryCodes(env.db, env.sealer, userId);
  if (!codes)
    throw new HttpError('conflict', 'Two-factor authentication is not enabled: recovery codes come with it');
  return codes;
}

/** First boot: the setup token creates the first operator, once; then setup closes. */
export async function createFirstOperator(
  env: Services,
  input: { token: string; username: string; password: string },
): Promise<PublicUser> {
  const closed = () => new HttpError('not_found', 'Setup is closed');
  if ((await countUsers(env.db)) > 0) throw closed();
  if (!(await checkSetupToken(env.config.dataDir, input.token)))
    throw new HttpError('forbidden', 'Setup token is not valid');
  const hash = await hashPassword(input.password, env.config.passwordCost);
  // Two racing requests with the token: the transaction lets exactly one create the first operator.
  const user = await env.db.transaction().execute(async (tx) => {
    if ((await countUsers(tx)) > 0) throw closed();
    return insertUser(tx, input.username, hash);
  });
  await closeSetup(env.config.dataDir);
  return user;
}
