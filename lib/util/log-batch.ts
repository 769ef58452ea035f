// What a bounded, persisted log (a deployment's, a run's) shares: a line cleaned to plain text,
// and the batching that writes the lines of one tick together, one batch after another in order.

const MAX_LINE = 8 * 1024;

/** Escape sequences and control characters other than tab removed; a very long line cut. */
export function cleanLine(line: string): string {
  const text = line
    .replace(/\u001b\[[0-?]*[ -/]*[@-~]/g, '')
    .replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, '');
  return text.length > MAX_LINE ? `${text.slice(0, MAX_LINE)}…` : text;
}

/**
 * Items pushed in the same tick reach `write` as one batch; batches are written one at a time, in
 * order. `write` must not throw (a log write never fails what it logs).
 */
export class TickBatch<T> {
  private pending: T[] = [];
  private flushing: Promise<void> = Promise.resolve();
  private scheduled = false;

  constructor(private readonly write: (batch: T[]) => Promise<void>) {}

  push(item: T): void {
    this.pending.push(item);
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      this.flushing = this.flushing.then(() => this.writePending());
    });
  }

  /** Resolves once everything pushed so far is written. */
  async settle(): Promise<void> {
    await Promise.resolve();
    await this.flushing;
    if (this.pending.length) {
      this.flushing = this.flushing.then(() => this.writePending());
      await this.flushing;
    }
  }

  private async writePending(): Promise<void> {
    const batch = this.pending.splice(0);
    if (batch.length) await this.write(batch);
  }
}
