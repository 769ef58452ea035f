// The log of one deployment: every line persisted (bounded) and published on build:<id> with a
// sequence number, in that order, so a late subscriber's replay (from the table) and the live
// lines (from the bus) meet without a gap or a duplicate. Secret values are masked first.
import { insertLogLines } from './store.js';
import type { Db } from '../db/index.js';
import { nowIso } from '../db/index.js';
import type { Bus } from '../events/bus.js';
import { cleanLine, TickBatch } from '../util/log-batch.js';

export { masker, MASK } from '../util/mask.js';

export const MAX_LOG_LINES = 10_000;
export const MAX_LOG_BYTES = 5 * 1024 * 1024;

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
  private readonly batch = new TickBatch<LogLine>((lines) => this.persist(lines));
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
    let text = cleanLine(this.mask(line));
    const size = Buffer.byteLength(text);
    if (this.seq + 1 >= this.limits.lines || this.bytes + size > this.limits.bytes) {
      this.truncated = true;
      text = `log truncated: more than ${this.limits.lines} lines or ${Math.round(this.limits.bytes / 1024 / 1024)} MiB`;
      stream = 'deploy';
    }
    this.bytes += size;
    this.batch.push({
      deployment_id: this.deploymentId,
      seq: ++this.seq,
      at: nowIso(this.now()),
      stream,
      line: text,
    });
  }

  /** Lines produced in the same tick are written in one insert, then published. */
  private async persist(batch: LogLine[]): Promise<void> {
    try {
      await insertLogLines(this.db, batch);
    } catch {
      // A log write must never fail the deployment; the lines still go to live subscribers.
    }
    const topic = `build:${this.deploymentId}`;
    for (const l of batch) this.bus.publish(topic, { seq: l.seq, at: l.at, stream: l.stream, line: l.line });
  }

  /** Resolves once every line written so far is persisted and published. */
  flush(): Promise<void> {
    return this.batch.settle();
  }
}
