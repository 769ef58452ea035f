// The output of one run: every line persisted (bounded, like a deployment's log) and published
// on run:<id> with a sequence number, in that order, so a late subscriber's replay (from the
// table) and the live lines meet without a gap. Secret values are masked first. Each line names
// its app (and service): the log drains hand run lines on from the bus (lib/drains/collector.ts).
import type { Db } from '../db/index.js';
import type { Bus } from '../events/bus.js';
import { cleanLine, TickBatch } from '../util/log-batch.js';
import { insertRunLogs, type RunLogRow } from './store.js';

export const MAX_RUN_LOG_LINES = 10_000;
export const MAX_RUN_LOG_BYTES = 5 * 1024 * 1024;

/** `system`: what the control plane says about the run (started, exited, timed out). */
export type RunStream = 'stdout' | 'stderr' | 'system';

export const runTopic = (id: string) => `run:${id}`;

export class RunLog {
  private seq: number;
  private bytes = 0;
  private truncated = false;
  private readonly batch = new TickBatch<RunLogRow>((rows) => this.persist(rows));
  mask: (s: string) => string = (s) => s;
  /** Sees every line as stored (a release command's lines also go to its deployment's log). */
  onLine: ((line: string, stream: RunStream) => void) | null = null;

  constructor(
    private readonly db: Db,
    private readonly bus: Bus,
    readonly runId: string,
    private readonly now: () => number,
    startSeq = 0,
    private readonly origin: { app_id: string; service: string | null } | null = null,
  ) {
    this.seq = startSeq;
  }

  /** True once the bound was reached: later lines are counted by the follower but not kept. */
  get full(): boolean {
    return this.truncated;
  }

  write(line: string, stream: RunStream, at?: string): void {
    if (this.truncated) return;
    let text = cleanLine(this.mask(line));
    const size = Buffer.byteLength(text);
    if (this.seq + 1 >= MAX_RUN_LOG_LINES || this.bytes + size > MAX_RUN_LOG_BYTES) {
      this.truncated = true;
      text = `output truncated: more than ${MAX_RUN_LOG_LINES} lines or ${MAX_RUN_LOG_BYTES / 1024 / 1024} MiB`;
      stream = 'system';
    }
    this.bytes += size;
    const when =
      at && !Number.isNaN(Date.parse(at)) ? new Date(at).toISOString() : new Date(this.now()).toISOString();
    this.batch.push({ run_id: this.runId, seq: ++this.seq, at: when, stream, line: text });
    this.onLine?.(text, stream);
  }

  private async persist(batch: RunLogRow[]): Promise<void> {
    try {
      await insertRunLogs(this.db, batch);
    } catch {
      // A log write never fails the run; the lines still reach live subscribers.
    }
    const topic = runTopic(this.runId);
    const who = this.origin
      ? { app_id: this.origin.app_id, ...(this.origin.service ? { service: this.origin.service } : {}) }
      : {};
    for (const l of batch)
      this.bus.publish(topic, { type: 'line', seq: l.seq, ...who, at: l.at, stream: l.stream, line: l.line });
  }

  /** Resolves once every line written so far is persisted and published. */
  flush(): Promise<void> {
    return this.batch.settle();
  }
}
