// The notifications of alert events: every event row is written `pending` with its transition
// (./store.ts) and sent from here, then marked `sent`; at boot the outbox sends what a stopped
// control plane left pending. So a notification is never lost to a restart, and never sent twice:
// the runtime stops the outbox before the notifier, so a graceful stop lets the deliveries in
// flight end and be marked; an event whose deliveries a stopping notifier cut short before any
// reached its channel stays pending. Only a crash in the middle of an exchange can repeat one.
import type { Db } from '../db/index.js';
import type { Logger } from '../log.js';
import type { Notifier } from '../notify/notifier.js';
import { markNotified, pendingEvents, appName } from './store.js';

export interface OutboxDeps {
  db: Db;
  notifier: Pick<Notifier, 'send' | 'isStopped'>;
  log?: Logger;
  now: () => number;
}

export class AlertOutbox {
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;

  constructor(private readonly deps: OutboxDeps) {}

  /** Sends what is pending, now or right after the current round. */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.drain()
      .catch((err) => this.deps.log?.warn({ err: String(err) }, 'alert notifications failed'))
      .finally(() => {
        this.running = null;
        if (this.again && !this.stopped) {
          this.again = false;
          this.kick();
        }
      });
  }

  /** Resolves when nothing is being sent (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  private async drain(): Promise<void> {
    for (;;) {
      const batch = await pendingEvents(this.deps.db);
      if (!batch.length || this.stopped) return;
      for (const e of batch) {
        if (this.stopped) return;
        const event = e.kind === 'fired' ? 'alert_fired' : 'alert_resolved';
        const app = e.app_id ? await appName(this.deps.db, e.app_id) : null;
        const reached = await this.deps.notifier.send(
          event,
          {
            type: event,
            rule_id: e.rule_id,
            rule: e.rule,
            app_id: e.app_id,
            app,
            metric: e.metric,
            op: e.op,
            threshold: e.threshold,
            value: e.value,
            detail: e.detail,
            at: e.at,
          },
          e.channels,
        );
        // Cut short by a stopping notifier before it reached anyone: sent by the next start.
        if (reached === 0 && this.deps.notifier.isStopped()) return;
        await markNotified(this.deps.db, e.id, new Date(this.deps.now()).toISOString());
      }
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.idle();
  }
}
