// Authenticates one inbound forge delivery over the raw body bytes. Every failure is the same
// value ({ok: false}), whatever the reason, so the handler answers one 401 and nobody can tell
// an unknown app from a wrong signature from an app without a secret.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { safeEqual } from '../crypto/random.js';

export type Provider = 'github' | 'gitea' | 'gitlab' | 'bitbucket';

export interface HeadersLike {
  get(name: string): string | null;
}

export type Verified = { ok: true; provider: Provider; event: string; deliveryId: string | null };
export type Rejected = { ok: false };

const REJECTED: Rejected = Object.freeze({ ok: false }) as Rejected;

// Event names of the four forges ("push", "Tag Push Hook", "repo:push"). A comma means the
// header was sent twice and joined by Headers, which we refuse as ambiguous.
const EVENT = /^[A-Za-z0-9 _:.-]{1,64}$/;
// Delivery ids are UUIDs in practice; allow a little more, never a comma or a space.
const DELIVERY = /^[A-Za-z0-9._:{}-]{1,128}$/;
const HEX64 = /^[0-9a-fA-F]{64}$/;

// Used when the app has no secret, so the work done (and its timing) does not reveal that.
const NO_SECRET_KEY = 'svc: no webhook secret configured';

/**
 * Which forge sent it, decided by headers only, in this order:
 *
 * 1. Forgejo / Gitea: any X-Forgejo-* or X-Gitea-* event or signature header. Both also send
 *    GitHub-compatible headers (X-GitHub-Event, X-Hub-Signature-256, and X-Hub-Signature with a
 *    SHA-1), but the body is in Gitea's format, so their own headers must win.
 * 2. GitLab: X-Gitlab-Event or X-Gitlab-Token.
 * 3. GitHub: X-GitHub-Event.
 * 4. Bitbucket (Cloud, and Server/Data Center): X-Event-Key.
 *
 * GitLab, GitHub and Bitbucket never send each other's headers; a delivery that claims more
 * than one of those three (after the Gitea case is taken out) is refused as ambiguous.
 */
export function detectProvider(h: HeadersLike): Provider | null {
  if (
    has(h, 'x-forgejo-event') ||
    has(h, 'x-forgejo-signature') ||
    has(h, 'x-gitea-event') ||
    has(h, 'x-gitea-signature')
  )
    return 'gitea';
  const claims: Provider[] = [];
  if (has(h, 'x-gitlab-event') || has(h, 'x-gitlab-token')) claims.push('gitlab');
  if (has(h, 'x-github-event')) claims.push('github');
  if (has(h, 'x-event-key')) claims.push('bitbucket');
  return claims.length === 1 ? claims[0]! : null;
}

export function verifyDelivery(input: {
  headers: HeadersLike;
  body: Uint8Array;
  secret: string | null;
}): Verified | Rejected {
  const { headers: h, body } = input;
  const secret = input.secret && input.secret.length > 0 ? input.secret : null;
  const provider = detectProvider(h);
  // With no secret or no provider we still hash the body once, so the answer takes about as
  // long as a real verification and the app's configuration cannot be timed from outside.
  if (!secret || !provider) {
    hmacHex(NO_SECRET_KEY, body);
    return REJECTED;
  }
  switch (provider) {
    case 'gitea': {
      // Forgejo sends both X-Forgejo-Signature and X-Gitea-Signature (same value); take Forgejo's
      // when present. Both carry bare hex, no "sha256=" prefix.
      const sig = one(h, has(h, 'x-forgejo-signature') ? 'x-forgejo-signature' : 'x-gitea-signature');
      const event = one(h, has(h, 'x-forgejo-event') ? 'x-forgejo-event' : 'x-gitea-event');
      const id = optional(h, has(h, 'x-forgejo-delivery') ? 'x-forgejo-delivery' : 'x-gitea-delivery');
      if (!sig.ok || !event.ok || !id.ok) return REJECTED;
      return hexMatches(sig.value, secret, body) ? accept(provider, event.value, id.value) : REJECTED;
    }
    case 'github': {
      const sig = one(h, 'x-hub-signature-256');
      const event = one(h, 'x-github-event');
      const id = optional(h, 'x-github-delivery');
      if (!sig.ok || !event.ok || !id.ok) return REJECTED;
      return prefixedMatches(sig.value, secret, body) ? accept(provider, event.value, id.value) : REJECTED;
    }
    case 'bitbucket': {
      // Bitbucket Cloud signs with X-Hub-Signature, but in the sha256= form (not GitHub's old SHA-1).
      const sig = one(h, 'x-hub-signature');
      const event = one(h, 'x-event-key');
      // Cloud names the delivery X-Request-UUID; Server/Data Center X-Request-Id.
      const id = optional(h, has(h, 'x-request-uuid') ? 'x-request-uuid' : 'x-request-id');
      if (!sig.ok || !event.ok || !id.ok) return REJECTED;
      return prefixedMatches(sig.value, secret, body) ? accept(provider, event.value, id.value) : REJECTED;
    }
    case 'gitlab': {
      // GitLab does not sign: it sends the secret itself. Still compare in constant time, and
      // hash the body anyway so the timing looks like the other forges.
      const token = one(h, 'x-gitlab-token');
      const event = one(h, 'x-gitlab-event');
      const uuid = optional(h, 'x-gitlab-event-uuid');
      const key = optional(h, 'idempotency-key');
      // Newer GitLab sends Idempotency-Key, documented as constant across retries of a delivery,
      // which is exactly what duplicate detection wants; older versions only X-Gitlab-Event-UUID.
      hmacHex(NO_SECRET_KEY, body);
      if (!token.ok || !event.ok || !uuid.ok || !key.ok) return REJECTED;
      return safeEqual(token.value, secret)
        ? accept(provider, event.value, key.value ?? uuid.value)
        : REJECTED;
    }
  }
}

/**
 * What a refused delivery claimed to be, for the delivery log only: the forge its headers name and
 * its event header when that has the shape of an event name. Unverified, so never acted upon.
 */
export function claimedSender(h: HeadersLike): { provider: Provider | null; event: string | null } {
  const provider = detectProvider(h);
  const header = {
    gitea: ['x-forgejo-event', 'x-gitea-event'],
    github: ['x-github-event'],
    gitlab: ['x-gitlab-event'],
    bitbucket: ['x-event-key'],
  };
  const event =
    provider === null ? null : (header[provider].map((n) => h.get(n)).find((v) => v !== null) ?? null);
  return { provider, event: event !== null && EVENT.test(event) ? event : null };
}

function accept(provider: Provider, event: string, deliveryId: string | null): Verified | Rejected {
  if (!EVENT.test(event)) return REJECTED;
  if (deliveryId !== null && !DELIVERY.test(deliveryId)) return REJECTED;
  return { ok: true, provider, event, deliveryId };
}

function has(h: HeadersLike, name: string): boolean {
  return h.get(name) !== null;
}

type Field<T> = { ok: true; value: T } | { ok: false };

/** A header that must be present exactly once (Headers joins repeats with ", "). */
function one(h: HeadersLike, name: string): Field<string> {
  const v = h.get(name);
  if (v === null || v.length === 0 || v.length > 256 || v.includes(',')) return { ok: false };
  return { ok: true, value: v.trim() };
}

/** A header that may be absent, but when present must be a single value. */
function optional(h: HeadersLike, name: string): Field<string | null> {
  const v = h.get(name);
  if (v === null) return { ok: true, value: null };
  return one(h, name);
}

function hmacHex(secret: string, body: Uint8Array): Buffer {
  return createHmac('sha256', secret).update(body).digest();
}

/** "sha256=<64 hex>" (GitHub, Bitbucket). */
function prefixedMatches(value: string, secret: string, body: Uint8Array): boolean {
  if (!value.startsWith('sha256=')) {
    hmacHex(secret, body);
    return false;
  }
  return hexMatches(value.slice('sha256='.length), secret, body);
}

function hexMatches(hex: string, secret: string, body: Uint8Array): boolean {
  const expected = hmacHex(secret, body);
  // Length and alphabet are public facts about the format, so checking them first leaks nothing
  // about the secret; the digest comparison itself is constant-time.
  if (!HEX64.test(hex)) return false;
  return timingSafeEqual(expected, Buffer.from(hex, 'hex'));
}

/** The signature a forge would send for this body (tests, and the dashboard's "send test" button). */
export function signBody(secret: string, body: Uint8Array | string): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}
