// One scheduler for every backup config and the instance backup (croner, 5-field, UTC). A config remembers the last
// schedule slot it handled (`last_scheduled_at`), and claiming a slot is one conditional
// UPDATE: after downtime, every missed slot folds into one run at boot, and no slot runs twice,
// even across restarts.
import type { Services } from '../http/handler.js';
import { parseSchedule } from './config.js';
import { claimSlot, enabledConfigs } from './store.js';
import * as instanceStore from './instance-store.js';
import { startRun } from './run.js';
import { startInstanceRun } from './instance-run.js';

const MAX_STEPS = 100_000;

/** The latest slot of `schedule` in (after, now], or null when none is due. */
export function latestDueSlot(schedule: string, afterMs: number, nowMs: number): Date | null {
  const cron = parseSchedule(schedule);
  let next = cron.nextRun(new Date(afterMs));
  if (!next || next.getTime() > nowMs) return null;
  let due = next;
  for (let i = 0; i < MAX_STEPS; i++) {
    next = cron.nextRun(due);
    if (!next || next.getTime() > nowMs) break;
    due = next;
  }
  return due;
}

/** Starts one run for each enabled config with a due slot; returns the config ids started. */
export async function runDue(env: Services, nowMs: number): Promise<string[]> {
  const started: string[] = [];
  for (const cfg of await enabledConfigs(env.db)) {
    const after = Date.parse(cfg.last_scheduled_at ?? cfg.created_at);
    let slot: Date | null;
    try {
      slot = latestDueSlot(cfg.schedule, after, nowMs);
    } catch {
      continue;
    }
    if (!slot) continue;
    if (!(await claimSlot(env.db, cfg, slot.toISOString()))) continue;
    try {
      await startRun(env, cfg, 'schedule');
      started.push(cfg.id);
    } catch (e) {
      env.log.warn({ backup: cfg.id, err: (e as Error).message }, 'scheduled backup could not start');
    }
  }
  return started;
}

/** The scheduler's tick for the instance backup: one run for the latest due slot, claimed once. */
export async function runDueInstance(env: Services, nowMs: number): Promise<boolean> {
  const cfg = await instanceStore.readConfig(env.db);
  if (!cfg || cfg.enabled !== 1) return false;
  let slot: Date | null;
  try {
    slot = latestDueSlot(cfg.schedule, Date.parse(cfg.last_scheduled_at ?? cfg.created_at), nowMs);
  } catch {
    return false;
  }
  if (!slot) return false;
  if (!(await instanceStore.claimSlot(env.db, cfg, slot.toISOString()))) return false;
  try {
    await startInstanceRun(env, 'schedule');
    return true;
  } catch (e) {
    env.log.warn({ err: (e as Error).message }, 'scheduled instance backup could not start');
    return false;
  }
}

export class BackupScheduler {
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<unknown> = Promise.resolve();
  constructor(
    private readonly env: Services,
    private readonly everyMs = 30_000,
  ) {}

  start(): void {
    const tick = () => {
      const now = this.env.now();
      this.ticking = Promise.all([runDue(this.env, now), runDueInstance(this.env, now)]).catch((e) =>
        this.env.log.warn({ err: String(e) }, 'backup scheduler tick failed'),
      );
    };
    tick();
    this.timer = setInterval(tick, this.everyMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.ticking;
  }
}
