// What the unit tests of lib/auth share: a fixed clock, session limits, and an in-memory database
// with one operator. These tests run fast on purpose: `npm run mutation` runs them once per mutant.
import { memoryEnv } from '../../_support/env.js';
import { insertUser } from '#lib/auth/users-store.js';

export const T0 = Date.parse('2030-01-01T00:00:00Z');
export const LIMITS = { idleSeconds: 3600, maxSeconds: 86400 };
export const iso = (ms: number) => new Date(ms).toISOString();
export const headers = (h: Record<string, string>) => ({
  get: (n: string) => h[n.toLowerCase()] ?? null,
});

export async function setup() {
  const env = await memoryEnv();
  const user = await insertUser(env.db, 'alice', 'scrypt$10$8$1$x$y');
  return { env, db: env.db, user };
}
