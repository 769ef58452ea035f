// Sign-in with an OpenID Connect provider (SVC_OIDC_*): the authorization code flow with PKCE,
// state and nonce, checked by openid-client. What the flow must remember between the redirect
// and the callback travels in a short-lived cookie encrypted under a key derived from the
// instance key: it binds the flow to the browser that started it, and no server table fills up
// with abandoned attempts.
import type * as OpenId from 'openid-client';
import type * as Jose from 'jose';
import { hkdfSync } from 'node:crypto';
import type { Services } from '../http/handler.js';
import type { Client } from '../http/handler.js';
import type { OidcConfig } from '../config.js';
import { HttpError } from '../http/errors.js';
import { parseCookies, serializeCookie } from '../http/cookies.js';
import { Headers } from '../http/respond.js';
import { nowIso } from '../db/index.js';
import { safeEqual } from '../crypto/random.js';
import { ROLES, type Role } from './roles.js';
import { USERNAME_PATTERN, publicUser, usernameKey, type PublicUser } from './users.js';
import {
  findUser,
  idOfSubject,
  insertUser,
  otherEnabledOwner,
  setLastLogin,
  setRole,
  userBySubject,
  usernamesLike,
} from './users-store.js';
import { authenticate } from './principal.js';
import { startSession } from './login.js';
import { markStepUp } from './stepup.js';
import { invalidateCredentials } from './cache.js';
import { getBaseDomain } from '../domains/store.js';
import { effectiveControlDomain } from '../proxy/config.js';

export const FLOW_COOKIE = 'svc_oidc';
const FLOW_PATH = '/api/auth/oidc';
/** Time to sign in at the provider, consent screens included. */
const FLOW_SECONDS = 600;
/** What an operator of the provider has instead of a password hash: nothing verifies against it. */
export const NO_PASSWORD = '!sso';
/** Provider metadata is fetched again after this long (new endpoints; keys rotate through the JWKS cache anyway). */
const DISCOVERY_TTL_MS = 3600_000;

// Loaded on first use: an instance without a provider never pays for these modules.
let openid: Promise<typeof OpenId> | undefined;
const lib = () => (openid ??= import('openid-client'));
let jose: Promise<typeof Jose> | undefined;
const joseLib = () => (jose ??= import('jose'));

const discovered = new Map<string, { at: number; config: Promise<OpenId.Configuration> }>();

/** The provider's metadata and this client, discovered once and shared by every sign-in. */
async function providerConfig(c: OidcConfig, now: number): Promise<OpenId.Configuration> {
  const key = `${c.issuer}\n${c.clientId}\n${c.clientSecret}`;
  let hit = discovered.get(key);
  if (!hit || now - hit.at > DISCOVERY_TTL_MS) {
    hit = { at: now, config: discover(c) };
    discovered.set(key, hit);
    const mine = hit;
    mine.config.catch(() => discovered.get(key) === mine && discovered.delete(key));
  }
  try {
    return await hit.config;
  } catch (e) {
    throw new HttpError(
      'service_unavailable',
      `The identity provider (${c.issuer}) cannot be reached or its discovery document is not valid: ${reason(e)}`,
    );
  }
}

async function discover(c: OidcConfig): Promise<OpenId.Configuration> {
  const client = await lib();
  // Only a loopback issuer may be plain http (lib/config.ts refuses any other).
  const execute = new URL(c.issuer).protocol === 'http:' ? [client.allowInsecureRequests] : [];
  const config = await client.discovery(
    new URL(c.issuer),
    c.clientId,
    undefined,
    client.ClientSecretBasic(c.clientSecret),
    { execute, timeout: 10 },
  );
  // client_secret_basic is the standard's default; a provider that announces only the POST form gets that.
  const methods = config.serverMetadata().token_endpoint_auth_methods_supported;
  if (methods && !methods.includes('client_secret_basic') && methods.includes('client_secret_post')) {
    const again = new client.Configuration(
      config.serverMetadata(),
      c.clientId,
      undefined,
      client.ClientSecretPost(c.clientSecret),
    );
    for (const fn of execute) fn(again);
    return again;
  }
  return config;
}

const reason = (e: unknown): string => {
  const err = e as { message?: string; cause?: { message?: string } } | null;
  const detail =
    err?.cause?.message && err.cause.message !== err.message
      ? `${err.message} (${err.cause.message})`
      : (err?.message ?? String(e));
  return detail.slice(0, 300);
};

/**
 * Where the provider sends the browser back: from configuration only (SVC_PUBLIC_URL, else the
 * control domain), never from the request's Host header, which is whatever the client sent.
 */
export async function redirectUri(env: Services): Promise<string> {
  const control = effectiveControlDomain(
    env.config.proxy.controlDomain,
    await getBaseDomain(env.db, env.config.baseDomain),
  );
  const base = env.config.publicUrl ?? (control ? `https://${control}` : null);
  if (!base)
    throw new HttpError(
      'service_unavailable',
      'Sign-in with the identity provider needs the public address of the control plane: set SVC_PUBLIC_URL (or a base domain)',
    );
  return `${base}${FLOW_PATH}/callback`;
}

/** What the callback needs to finish the flow this browser started. */
interface Flow {
  verifier: string;
  state: string;
  nonce: string;
  redirectUri: string;
  /** Where the browser goes afterwards (a path of this site). */
  returnTo: string;
  /** A step-up: the session it is for. */
  stepUpSession?: string;
}

// Its own key: the instance key signs other things, and one key should not serve two algorithms.
const flowKey = (signingKey: Uint8Array) =>
  new Uint8Array(hkdfSync('sha256', signingKey, new Uint8Array(0), 'svc oidc flow cookie', 32));

async function sealFlow(signingKey: Uint8Array, flow: Flow, now: number): Promise<string> {
  const { EncryptJWT } = await joseLib();
  const iat = Math.floor(now / 1000);
  return new EncryptJWT({ ...flow })
    .setProtectedHeader({ alg: 'dir', enc: 'A256GCM', typ: 'svc-oidc' })
    .setIssuedAt(iat)
    .setExpirationTime(iat + FLOW_SECONDS)
    .encrypt(flowKey(signingKey));
}

async function openFlow(signingKey: Uint8Array, token: string, now: number): Promise<Flow | null> {
  if (token.length > 4096) return null;
  const { jwtDecrypt } = await joseLib();
  try {
    const { payload } = await jwtDecrypt(token, flowKey(signingKey), {
      keyManagementAlgorithms: ['dir'],
      contentEncryptionAlgorithms: ['A256GCM'],
      typ: 'svc-oidc',
      currentDate: new Date(now),
    });
    const p = payload as Partial<Flow>;
    if (
      typeof p.verifier !== 'string' ||
      typeof p.state !== 'string' ||
      typeof p.nonce !== 'string' ||
      typeof p.redirectUri !== 'string' ||
      typeof p.returnTo !== 'string'
    )
      return null;
    return {
      verifier: p.verifier,
      state: p.state,
      nonce: p.nonce,
      redirectUri: p.redirectUri,
      returnTo: p.returnTo,
      stepUpSession: typeof p.stepUpSession === 'string' ? p.stepUpSession : undefined,
    };
  } catch {
    return null;
  }
}

const flowCookie = (value: string, secure: boolean, maxAge: number) =>
  serializeCookie(FLOW_COOKIE, value, { httpOnly: true, secure, maxAge, path: FLOW_PATH });

/** A path of this site to land on afterwards; anything else (another origin, `//host`) is refused. */
export const RETURN_TO = /^\/(?![/\\])[\x21-\x7e]{0,511}$/;

const notConfigured = () =>
  new HttpError('not_found', 'Sign-in with an identity provider is not configured (SVC_OIDC_ISSUER)');

/**
 * Starts a sign-in (or, with `stepUp`, a step-up of the calling session) at the provider: answers
 * where to send the browser and the cookie that remembers the flow.
 */
export async function beginOidc(
  env: Services,
  request: Request,
  client: Client,
  opts: { stepUp: boolean; returnTo: string },
): Promise<{ location: string; headers: Headers }> {
  const c = env.config.oidc;
  if (!c) throw notConfigured();
  const now = env.now();
  let stepUpSession: string | undefined;
  if (opts.stepUp) {
    const principal = await authenticate(env, request.headers);
    if (!principal)
      throw new HttpError('unauthorized', 'A step-up is for a signed-in session: sign in first');
    if (principal.kind !== 'session')
      throw new HttpError(
        'forbidden',
        'A step-up at the identity provider is for a signed-in browser session, not an API token',
      );
    if (!principal.user.sso)
      throw new HttpError('forbidden', 'This operator signs in with a password: POST /api/auth/step-up');
    stepUpSession = principal.credentialId;
  }
  const [openId, config, redirect] = await Promise.all([lib(), providerConfig(c, now), redirectUri(env)]);
  const verifier = openId.randomPKCECodeVerifier();
  const flow: Flow = {
    verifier,
    state: openId.randomState(),
    nonce: openId.randomNonce(),
    redirectUri: redirect,
    returnTo: opts.returnTo,
    stepUpSession,
  };
  const params: Record<string, string> = {
    redirect_uri: redirect,
    scope: c.scopes,
    response_type: 'code',
    code_challenge: await openId.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state: flow.state,
    nonce: flow.nonce,
  };
  // Proof of presence: the provider must ask again, whatever session it holds (auth_time is checked on return).
  if (opts.stepUp) params.max_age = '0';
  const location = openId.buildAuthorizationUrl(config, params).href;
  const headers = new Headers({ location, 'cache-control': 'no-store' });
  headers.append(
    'set-cookie',
    flowCookie(await sealFlow(env.signingKey, flow, now), client.secure, FLOW_SECONDS),
  );
  return { location, headers };
}

/** The highest role any of the claim's values maps to; null when none maps (or the claim is absent). */
export function roleFromClaim(value: unknown, map: Readonly<Record<string, Role>>): Role | null {
  const values = Array.isArray(value) ? value : [value];
  let best: Role | null = null;
  for (const v of values) {
    if (typeof v !== 'string' || !Object.hasOwn(map, v)) continue;
    const role = map[v]!;
    if (best === null || ROLES.indexOf(role) < ROLES.indexOf(best)) best = role;
  }
  return best;
}

export type OidcOutcome =
  | { kind: 'refused'; message: string; claimed: string; actor?: PublicUser }
  | {
      kind: 'session';
      user: PublicUser;
      headers: Headers;
      created: boolean;
      role: Role;
      previousRole: Role | null;
      roleKept?: boolean;
    }
  | {
      kind: 'step_up';
      user: PublicUser;
      headers: Headers;
      verifiedUntil: string;
      role: Role;
      previousRole: Role | null;
      roleKept?: boolean;
    };

/**
 * The provider sent the browser back: check state, exchange the code with the PKCE verifier,
 * check the ID token and its nonce (and, for a step-up, a fresh auth_time), then map the role
 * claim and sign the person in (or mark the session's step-up). A refusal creates nothing.
 */
export async function finishOidc(env: Services, request: Request, client: Client): Promise<OidcOutcome> {
  const c = env.config.oidc;
  if (!c) throw notConfigured();
  const now = env.now();
  const clear = flowCookie('', client.secure, 0);
  const fail = (message: string) => new HttpError('forbidden', message, undefined, { 'set-cookie': clear });
  const raw = parseCookies(request.headers.get('cookie'))[FLOW_COOKIE];
  const flow = raw ? await openFlow(env.signingKey, raw, now) : null;
  if (!flow)
    throw fail(
      'No sign-in with the identity provider is in progress in this browser, or it took too long: start again',
    );
  const url = new URL(request.url);
  const state = url.searchParams.get('state');
  if (state === null || !safeEqual(state, flow.state))
    throw fail(
      'The answer from the identity provider does not belong to the sign-in this browser started (state mismatch)',
    );
  const error = url.searchParams.get('error');
  if (error !== null)
    throw fail(
      `The identity provider refused the sign-in: ${error.slice(0, 80).replace(/[^\x20-\x7e]/g, '?')}`,
    );

  const [openId, config] = await Promise.all([lib(), providerConfig(c, now)]);
  // The callback URL as the provider knows it (the request may have come through a proxy under another address).
  const current = new URL(flow.redirectUri);
  current.search = url.search;
  let claims: Record<string, unknown>;
  try {
    const tokens = await openId.authorizationCodeGrant(config, current, {
      pkceCodeVerifier: flow.verifier,
      expectedState: flow.state,
      expectedNonce: flow.nonce,
      maxAge: flow.stepUpSession ? 0 : undefined,
    });
    claims = { ...tokens.claims()! };
    // Many providers put profile and group claims only in userinfo when an access token is issued.
    if (claims[c.roleClaim] === undefined && config.serverMetadata().userinfo_endpoint) {
      const info = await openId.fetchUserInfo(config, tokens.access_token, claims.sub as string);
      claims = { ...info, ...claims };
    }
  } catch (e) {
    if (e instanceof HttpError) throw e;
    env.log.warn({ err: reason(e) }, 'sign-in with the identity provider failed');
    throw fail(`Sign-in with the identity provider failed: ${reason(e)}`);
  }
  const subject = `${claims.iss as string} ${claims.sub as string}`;
  const claimed = displayName(claims);
  const role = roleFromClaim(claims[c.roleClaim], c.roleMap);
  const headers = new Headers();
  headers.append('set-cookie', clear);
  const existing = await userBySubject(env.db, subject);

  if (flow.stepUpSession) {
    const principal = await authenticate(env, request.headers);
    if (!principal || principal.kind !== 'session' || principal.credentialId !== flow.stepUpSession) {
      throw fail('The session that asked for this step-up has ended: sign in again');
    }
    if (!existing || existing.id !== principal.user.id)
      throw fail(
        'The step-up was made at the identity provider as another person than the one signed in here',
      );
    if (role === null)
      return {
        kind: 'refused',
        message: `${claimed} has no role here any more: the ${c.roleClaim} claim maps to none`,
        claimed,
        actor: principal.user,
      };
    const change = await applyRole(env, existing.id, existing.role as Role, role, now);
    const verifiedUntil = await markStepUp(env.db, principal, now);
    headers.set('location', flow.returnTo);
    return {
      kind: 'step_up',
      user: principal.user,
      headers,
      verifiedUntil,
      role: change.role,
      previousRole: change.previous,
      roleKept: change.kept,
    };
  }

  if (role === null)
    return {
      kind: 'refused',
      message: `${claimed} may not sign in here: the ${c.roleClaim} claim maps to no role`,
      claimed,
    };
  let userId: string;
  let created = false;
  let change: RoleChange = { role, previous: null };
  if (existing) {
    if (existing.disabled === 1)
      return { kind: 'refused', message: 'This operator is disabled', claimed, actor: publicUser(existing) };
    change = await applyRole(env, existing.id, existing.role as Role, role, now);
    userId = existing.id;
  } else {
    const made = await createOperator(env, claims, subject, role);
    userId = made.id;
    created = made.created;
    if (!made.created) {
      // Another request of the same person created them a moment ago: an ordinary sign-in then.
      const row = (await findUser(env.db, userId))!;
      if (row.disabled === 1)
        return { kind: 'refused', message: 'This operator is disabled', claimed, actor: publicUser(row) };
      change = await applyRole(env, row.id, row.role as Role, role, now);
    }
  }
  await setLastLogin(env.db, userId, nowIso(now));
  for (const cookie of (await startSession(env, request, client, userId)).getSetCookie())
    headers.append('set-cookie', cookie);
  headers.set('location', flow.returnTo);
  const user = publicUser((await findUser(env.db, userId))!);
  return {
    kind: 'session',
    user,
    headers,
    created,
    role: change.role,
    previousRole: change.previous,
    roleKept: change.kept,
  };
}

interface RoleChange {
  role: Role;
  /** The role before, when it changed (or was kept against the claims). */
  previous: Role | null;
  /** The claims asked for a lower role, but this is the last enabled owner. */
  kept?: boolean;
}

/** The role follows the claims, except that the instance never loses its last enabled owner. */
async function applyRole(
  env: Services,
  userId: string,
  current: Role,
  wanted: Role,
  now: number,
): Promise<RoleChange> {
  if (current === wanted) return { role: current, previous: null };
  const changed = await env.db.transaction().execute(async (tx) => {
    if (current === 'owner') {
      if (!(await otherEnabledOwner(tx, userId))) return false;
    }
    await setRole(tx, userId, wanted, nowIso(now));
    return true;
  });
  if (!changed) {
    env.log.warn(
      { userId, wanted },
      "the identity provider's claims would demote the last enabled owner: the role stays owner",
    );
    return { role: current, previous: current, kept: true };
  }
  // Sessions, tokens and sockets of this operator act with the new role from their next request.
  invalidateCredentials();
  return { role: wanted, previous: current };
}

const displayName = (claims: Record<string, unknown>): string => {
  for (const k of ['preferred_username', 'email', 'sub'])
    if (typeof claims[k] === 'string' && claims[k]) return (claims[k] as string).slice(0, 64);
  return 'unknown';
};

/** A username from the person's preferred username or email, made valid and unique. */
function baseUsername(claims: Record<string, unknown>): string {
  for (const k of ['preferred_username', 'email']) {
    const v = claims[k];
    if (typeof v !== 'string') continue;
    const cleaned = v
      .normalize('NFKD')
      .replace(/[^A-Za-z0-9._@-]+/g, '-')
      .replace(/^[^A-Za-z0-9]+/, '')
      .slice(0, 56);
    if (USERNAME_PATTERN.test(cleaned)) return cleaned;
  }
  return 'operator';
}

/** Creates the operator; when the same person was created concurrently, answers that one instead. */
async function createOperator(
  env: Services,
  claims: Record<string, unknown>,
  subject: string,
  role: Role,
): Promise<{ id: string; created: boolean }> {
  const base = baseUsername(claims);
  return env.db.transaction().execute(async (tx) => {
    const again = await idOfSubject(tx, subject);
    if (again) return { id: again.id, created: false };
    const key = usernameKey(base);
    const taken = new Set((await usernamesLike(tx, key)).map((r) => usernameKey(r)));
    let username = base;
    for (let n = 2; taken.has(usernameKey(username)); n++) username = `${base}-${n}`;
    const user = await insertUser(tx, username, NO_PASSWORD, { role, ssoSubject: subject });
    return { id: user.id, created: true };
  });
}
