// One scheduler for every backup config (croner, 5-field, UTC). A config remembers the last
// schedule slot it handled (`last_scheduled_at`), and claiming a slot is one conditional
// UPDATE: after downtime, every missed slot folds into one run at boot, and no slot runs twice,
// even across restarts.
import type { Env } from '../env.js';
import { parseSchedule } from './store.js';
import { startRun } from './run.js';

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
export async function runDue(env: Env, nowMs: number): Promise<string[]> {
  const started: string[] = [];
  const configs = await env.db.selectFrom('backup_configs').selectAll().where('enabled', '=', 1).execute();
  for (const cfg of configs) {
    const after = Date.parse(cfg.last_scheduled_at ?? cfg.created_at);
    let slot: Date | null;
    try {
      slot = latestDueSlot(cfg.schedule, after, nowMs);
    } catch {
      continue;
    }
    if (!slot) continue;
    const claimed = await env.db
      .updateTable('backup_configs')
      .set({ last_scheduled_at: slot.toISOString() })
      .where('id', '=', cfg.id)
      .where((eb) => (cfg.last_scheduled_at === null ? eb('last_scheduled_at', 'is', null) : eb('last_scheduled_at', '=', cfg.last_scheduled_at)))
      .executeTakeFirst();
    if (Number(claimed.numUpdatedRows) !== 1) continue;
    try {
      await startRun(env, cfg, 'schedule');
      started.push(cfg.id);
    } catch (e) {
      env.log.warn({ backup: cfg.id, err: (e as Error).message }, 'scheduled backup could not start');
    }
  }
  return started;
}

export class BackupScheduler {
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<unknown> = Promise.resolve();
  constructor(
    private readonly env: Env,
    private readonly everyMs = 30_000,
  ) {}

  start(): void {
    const tick = () => {
      this.ticking = runDue(this.env, this.env.now()).catch((e) => this.env.log.warn({ err: String(e) }, 'backup scheduler tick failed'));
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
