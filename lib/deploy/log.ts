// The log of one deployment: every line persisted (bounded) and published on build:<id> with a
// sequence number, in that order, so a late subscriber's replay (from the table) and the live
// lines (from the bus) meet without a gap or a duplicate. Secret values are masked first.
import type { Db } from '../db/index.js';
import { nowIso } from '../db/index.js';
import type { Bus } from '../events/bus.js';

export { masker, MASK } from '../util/mask.js';

export const MAX_LOG_LINES = 10_000;
export const MAX_LOG_BYTES = 5 * 1024 * 1024;
const MAX_LINE = 8 * 1024;

/**
 * `plan`: a generated build's plan, written before the build starts; `pull`: image pull progress;
 * `release`: the output of the release command (lib/deploy/release.ts).
 */
export type LogStream = 'deploy' | 'plan' | 'build' | 'pull' | 'error' | 'release';

export interface LogLine {
  deployment_id: string;
  seq: number;
  at: string;
  stream: string;
  line: string;
}

export class DeployLog {
  private seq = 0;
  private bytes = 0;
  private truncated = false;
  private pending: LogLine[] = [];
  private flushing: Promise<void> = Promise.resolve();
  private scheduled = false;
  mask: (s: string) => string = (s) => s;

  constructor(
    private readonly db: Db,
    private readonly bus: Bus,
    readonly deploymentId: string,
    private readonly now: () => number = Date.now,
    startSeq = 0,
    private readonly limits = { lines: MAX_LOG_LINES, bytes: MAX_LOG_BYTES },
  ) {
    this.seq = startSeq;
  }

  write(line: string, stream: LogStream = 'deploy'): void {
    if (this.truncated) return;
    // Control characters other than tab are dropped: the log is data, shown as text anywhere.
    let text = this.mask(line)
      .replace(/\u001b\[[0-?]*[ -/]*[@-~]/g, '')
      .replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, '');
    if (text.length > MAX_LINE) text = `${text.slice(0, MAX_LINE)}…`;
    const size = Buffer.byteLength(text);
    if (this.seq + 1 >= this.limits.lines || this.bytes + size > this.limits.bytes) {
      this.truncated = true;
      text = `log truncated: more than ${this.limits.lines} lines or ${Math.round(this.limits.bytes / 1024 / 1024)} MiB`;
      stream = 'deploy';
    }
    this.bytes += size;
    this.pending.push({
      deployment_id: this.deploymentId,
      seq: ++this.seq,
      at: nowIso(this.now()),
      stream,
      line: text,
    });
    if (!this.scheduled) {
      this.scheduled = true;
      // Lines produced in the same tick are written in one insert, then published.
      queueMicrotask(() => {
        this.scheduled = false;
        this.flushing = this.flushing.then(() => this.flushNow());
      });
    }
  }

  private async flushNow(): Promise<void> {
    const batch = this.pending.splice(0);
    if (!batch.length) return;
    try {
      for (let i = 0; i < batch.length; i += 200)
        await this.db
          .insertInto('deployment_logs')
          .values(batch.slice(i, i + 200))
          .execute();
    } catch {
      // A log write must never fail the deployment; the lines still go to live subscribers.
    }
    const topic = `build:${this.deploymentId}`;
    for (const l of batch) this.bus.publish(topic, { seq: l.seq, at: l.at, stream: l.stream, line: l.line });
  }

  /** Resolves once every line written so far is persisted and published. */
  async flush(): Promise<void> {
    await Promise.resolve();
    await this.flushing;
    if (this.pending.length) {
      this.flushing = this.flushing.then(() => this.flushNow());
      await this.flushing;
    }
  }
}
