// What every backup job shares: the master key it needs before it starts, the reason a failure
// is recorded with, and the set of jobs running in the background (a clean shutdown and the
// tests wait for them).
import type { Services } from '../http/handler.js';
import { unavailable } from '../http/errors.js';

/** The key artifacts are encrypted under; without it no job starts (503). */
export function masterKey(env: Services): Buffer {
  if (!env.config.masterKey) throw unavailable('SVC_MASTER_KEY is not set, so backups cannot be encrypted');
  return env.config.masterKey;
}

/** An error as one line a run, restore or verify records. */
export function reason(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).replace(/\s+/g, ' ').slice(0, 500);
}

export const iso = (env: Services) => new Date(env.now()).toISOString();

const jobs = new Set<Promise<unknown>>();

/** Runs a job in the background; it is waited for by settleJobs. */
export function track(p: Promise<unknown>): void {
  jobs.add(p);
  void p.catch(() => {}).finally(() => jobs.delete(p));
}

/** Waits for the background jobs of this process (tests, clean shutdown). */
export async function settleJobs(): Promise<void> {
  while (jobs.size) await Promise.allSettled([...jobs]);
}
