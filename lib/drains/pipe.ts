// One drain at work: its buffer, and one batch at a time to its receiver. A batch leaves the
// buffer when it is sent and is forgotten only once the receiver took it: a failure keeps it and
// tries again after a backoff (1 s doubling to 30 s), while new lines wait in the buffer (and the
// oldest are dropped, counted, when it is full). At-least-once from the moment a line is read.
import type { DrainKindDef, DrainLine, DrainSender } from './kinds/index.js';
import { LineBuffer } from './buffer.js';
import type { LastDrainDelivery } from './store.js';

export const BATCH_LINES = 1000;
export const BATCH_BYTES = 512 * 1024;
/** A partial batch waits this long for more lines (fewer, fuller requests at a low rate). */
export const LINGER_MS = 200;
const BACKOFF_MS = [1_000, 2_000, 4_000, 8_000, 16_000, 30_000];

export interface PipeOptions {
  id: string;
  kind: DrainKindDef;
  sender: DrainSender;
  appIds: ReadonlySet<string> | null;
  maxLines: number;
  maxBytes: number;
  now: () => number;
  /** Tests shorten the waits. */
  backoffMs?: number[];
  lingerMs?: number;
}

export type PipeState = 'idle' | 'sending' | 'failing';

export class DrainPipe {
  readonly id: string;
  readonly appIds: ReadonlySet<string> | null;
  private readonly buffer: LineBuffer;
  private inflight: DrainLine[] | null = null;
  private failures = 0;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  private sending: Promise<void> | null = null;
  /** Counts not yet written to the drain's row. */
  private unsaved = { delivered: 0, dropped: 0, last: null as LastDrainDelivery | null };
  /** Lines read for this drain since it started (delivered + dropped + waiting, in the end). */
  accepted = 0;

  constructor(private readonly opts: PipeOptions) {
    this.id = opts.id;
    this.appIds = opts.appIds;
    this.buffer = new LineBuffer(opts.maxLines, opts.maxBytes);
  }

  wants(appId: string): boolean {
    return this.appIds === null || this.appIds.has(appId);
  }

  offer(l: DrainLine): void {
    if (this.closed) return;
    this.accepted++;
    this.buffer.push(l);
    this.unsaved.dropped += this.buffer.takeDropped();
    this.schedule(this.buffer.length >= BATCH_LINES ? 0 : (this.opts.lingerMs ?? LINGER_MS));
  }

  get buffered(): number {
    return this.buffer.length + (this.inflight?.length ?? 0);
  }

  get state(): PipeState {
    if (this.failures > 0) return 'failing';
    return this.sending ? 'sending' : 'idle';
  }

  /** Counts since the last call, for the row. */
  takeCounts(): { delivered: number; dropped: number; last: LastDrainDelivery | null } {
    const c = this.unsaved;
    this.unsaved = { delivered: 0, dropped: 0, last: null };
    return c;
  }

  /** Counts not yet taken (the live view adds them to the row's). */
  peekCounts(): { delivered: number; dropped: number; last: LastDrainDelivery | null } {
    return this.unsaved;
  }

  private schedule(ms: number): void {
    if (this.closed || this.sending) return;
    if (this.timer && ms > 0) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.pump();
    }, ms);
    this.timer.unref?.();
  }

  private pump(): void {
    if (this.closed || this.sending) return;
    if (!this.inflight) {
      const batch = this.buffer.take(BATCH_LINES, BATCH_BYTES);
      if (!batch.length) return;
      this.inflight = batch;
    }
    this.sending = this.sendInflight().finally(() => {
      this.sending = null;
      if (this.closed) return;
      if (this.failures > 0) {
        const waits = this.opts.backoffMs ?? BACKOFF_MS;
        this.schedule(waits[Math.min(this.failures - 1, waits.length - 1)]!);
      } else if (this.buffer.length >= BATCH_LINES) this.schedule(0);
      else if (this.buffer.length) this.schedule(this.opts.lingerMs ?? LINGER_MS);
    });
  }

  private async sendInflight(): Promise<void> {
    const batch = this.inflight!;
    const r = await this.opts.sender
      .send(batch)
      .catch((e: Error) => ({ ok: false, status: null, error: e.message }));
    const at = new Date(this.opts.now()).toISOString();
    this.unsaved.last = {
      at,
      ok: r.ok,
      status: r.status,
      error: r.ok ? null : (r.error ?? 'failed'),
      lines: batch.length,
    };
    if (r.ok) {
      this.unsaved.delivered += batch.length;
      this.inflight = null;
      this.failures = 0;
    } else this.failures++;
  }

  /** Stops sending; answers the lines left undelivered (they are not kept across a restart). */
  async close(): Promise<number> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    await this.sending;
    this.opts.sender.close();
    return this.buffer.clear() + (this.inflight?.length ?? 0);
  }
}
