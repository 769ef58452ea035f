import type { Db } from '../db/index.js';
import { nowIso } from '../db/index.js';
import type { Principal } from '../http/handler.js';
import { invalidateCredentials } from './cache.js';
import { sessionStepUp } from './sessions-store.js';
import { tokenStepUp } from './tokens-store.js';

export const STEP_UP_SECONDS = 300;

export function hasRecentStepUp(p: Principal, now: number): boolean {
  return p.stepUpUntil !== null && Date.parse(p.stepUpUntil) > now;
}

/** Marks the session or token that did the step-up; another credential of the same user gets nothing. */
export async function markStepUp(db: Db, p: Principal, now: number): Promise<string> {
  const until = nowIso(now + STEP_UP_SECONDS * 1000);
  if (p.kind === 'session') await sessionStepUp(db, p.credentialId, until);
  else await tokenStepUp(db, p.credentialId, until);
  invalidateCredentials();
  return until;
}
