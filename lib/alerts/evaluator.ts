// Every SVC_ALERT_INTERVAL seconds each enabled rule is measured (./metrics.ts) and its state
// moved: ok -> firing once the condition held for for_s, firing -> ok once it was gone for for_s
// (counted metrics, whose window spans for_s: at once). A move and its event are one conditional write
// (./store.ts transition), so a rule notifies once per move, never while it stays in a state, and
// a restart resumes from the stored state without moving it again. The events go out through the
// outbox (./outbox.ts).
import type { Db } from '../db/index.js';
import type { Bus } from '../events/bus.js';
import type { Logger } from '../log.js';
import { METRIC_READERS, type MetricInputs, type Measurement } from './metrics.js';
import { compare, WINDOWED, type AlertRule } from './rules.js';
import { appName, listRules, noteEvaluation, pendingSince, pruneEvents, transition } from './store.js';
import type { AlertOutbox } from './outbox.js';

export interface EvaluatorDeps {
  db: Db;
  bus: Bus;
  log?: Logger;
  now: () => number;
  intervalMs: number;
  inputs: Omit<MetricInputs, 'now' | 'db'>;
  outbox: AlertOutbox;
}

const PRUNE_EVERY = 240;

export class AlertEvaluator {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private ticks = 0;

  constructor(private readonly deps: EvaluatorDeps) {}

  /** One evaluation of every enabled rule; concurrent calls share it. */
  evaluate(): Promise<void> {
    this.running ??= this.evaluateAll()
      .catch((err) => this.deps.log?.warn({ err: String(err) }, 'alert evaluation failed'))
      .finally(() => (this.running = null));
    return this.running;
  }

  private async evaluateAll(): Promise<void> {
    const now = this.deps.now();
    const inputs: MetricInputs = { ...this.deps.inputs, db: this.deps.db, now };
    let moved = false;
    for (const rule of await listRules(this.deps.db)) {
      if (!rule.enabled) continue;
      let m: Measurement | null = null;
      try {
        m = await METRIC_READERS[rule.metric](inputs, { appId: rule.app_id, windowS: rule.for_s });
      } catch (err) {
        this.deps.log?.warn({ rule: rule.id, err: String(err) }, 'alert rule could not be measured');
      }
      if (await this.step(rule, m, now)) moved = true;
    }
    if (moved) this.deps.outbox.kick();
    if (++this.ticks % PRUNE_EVERY === 0) await pruneEvents(this.deps.db);
  }

  /**
   * Applies one measurement to one rule; true when the rule changed state. A level must hold for
   * for_s to fire and be gone for for_s to resolve (no flapping on a noisy value); a counted
   * metric's window already spans for_s, so it moves at once either way.
   */
  private async step(rule: AlertRule, m: Measurement | null, now: number): Promise<boolean> {
    const at = new Date(now).toISOString();
    const value = m?.value ?? null;
    const note = (pending: string | null) =>
      noteEvaluation(this.deps.db, rule.id, { value, pending_since: pending, at });
    const pending = await pendingSince(this.deps.db, rule.id);
    // Nothing to measure: no move, and the wait (either way) goes on where it was.
    if (m === null) return note(pending).then(() => false);
    const holds = compare(m.value, rule.op, rule.threshold);
    const wants = rule.state === 'ok' ? holds : !holds;
    if (!wants) return note(null).then(() => false);
    const since = pending ?? at;
    if (!WINDOWED.has(rule.metric) && now - Date.parse(since) < rule.for_s * 1000)
      return note(since).then(() => false);
    return this.move(rule, rule.state === 'ok' ? 'firing' : 'ok', m, at);
  }

  private async move(rule: AlertRule, to: 'ok' | 'firing', m: Measurement, at: string): Promise<boolean> {
    const id = await transition(this.deps.db, { rule, to, value: m.value, detail: m.detail, at });
    if (id === null) return false;
    const app = rule.app_id ? await appName(this.deps.db, rule.app_id) : null;
    this.deps.bus.publish('alerts', {
      type: to === 'firing' ? 'alert_fired' : 'alert_resolved',
      event_id: id,
      rule_id: rule.id,
      rule: rule.name,
      app_id: rule.app_id,
      app,
      metric: rule.metric,
      op: rule.op,
      threshold: rule.threshold,
      value: m.value,
      detail: m.detail,
      at,
    });
    return true;
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.evaluate(), this.deps.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }
}
