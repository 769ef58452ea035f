// At boot, and when the engine answers again: runs a stopped control plane (or a lost engine)
// left behind are followed to their end or recorded `interrupted`; one-offs of finished runs go.
import type { Services } from '../http/handler.js';
import { runOwners } from './store.js';

export async function recoverJobRuns(env: Pick<Services, 'db' | 'runs'>): Promise<void> {
  await env.runs.recover((row) => runOwners(env.db, row));
}
