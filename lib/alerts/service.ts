// The alert machinery as one service: the evaluator on its interval, the outbox that sends the
// notifications of its events. Started and stopped by the runtime (runtime/background.ts).
import type { Db } from '../db/index.js';
import type { Bus } from '../events/bus.js';
import type { Logger } from '../log.js';
import type { Notifier } from '../notify/notifier.js';
import type { ResourceSampler } from '../resources/sampler.js';
import type { VitalsSampler } from '../series/vitals.js';
import type { RequestSeries } from '../series/requests.js';
import { AlertEvaluator } from './evaluator.js';
import { AlertOutbox } from './outbox.js';

export interface AlertsDeps {
  db: Db;
  bus: Bus;
  log?: Logger;
  now: () => number;
  intervalMs: number;
  notifier: Notifier;
  resources: ResourceSampler;
  vitals: VitalsSampler;
  series: RequestSeries;
}

// ctx.env of every handler carries it (the service registry of lib/http/handler.ts).
declare module '../http/handler.js' {
  interface Services {
    /** Alert rules: their evaluation on an interval and the outbox of their notifications. */
    alerts: Alerts;
  }
}

export class Alerts {
  readonly outbox: AlertOutbox;
  readonly evaluator: AlertEvaluator;

  constructor(deps: AlertsDeps) {
    this.outbox = new AlertOutbox({ db: deps.db, notifier: deps.notifier, log: deps.log, now: deps.now });
    this.evaluator = new AlertEvaluator({
      db: deps.db,
      bus: deps.bus,
      log: deps.log,
      now: deps.now,
      intervalMs: deps.intervalMs,
      outbox: this.outbox,
      inputs: { resources: deps.resources, vitals: deps.vitals, series: deps.series },
    });
  }

  /** Sends what a previous run left pending, then evaluates on the interval. */
  start(): void {
    this.outbox.kick();
    this.evaluator.start();
  }

  async stop(): Promise<void> {
    await this.evaluator.stop();
    await this.outbox.stop();
  }
}
