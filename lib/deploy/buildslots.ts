// Image builds are the heavy part of a deployment (CPU, memory, disk): SVC_BUILD_CONCURRENCY of them
// run at once, whatever the deploy concurrency lets run around them (clones, health gates). A
// deployment waits for a slot in the order it asked, and an abort (cancel, timeout) leaves the line.

export interface BuildSlot {
  /** Builds running now, this one included. */
  readonly building: number;
  release(): void;
}

export class BuildSlots {
  private inUse = 0;
  private readonly waiting: { grant: () => void; signal?: AbortSignal; onAbort: () => void }[] = [];

  constructor(readonly size: number) {}

  get building(): number {
    return this.inUse;
  }

  /** A slot; `onWait` hears once when none is free. Rejects with the signal's reason on abort. */
  async acquire(signal?: AbortSignal, onWait?: (building: number) => void): Promise<BuildSlot> {
    signal?.throwIfAborted();
    if (this.inUse >= this.size) {
      onWait?.(this.inUse);
      await new Promise<void>((resolve, reject) => {
        const entry = {
          signal,
          grant: () => {
            signal?.removeEventListener('abort', entry.onAbort);
            resolve();
          },
          onAbort: () => {
            const i = this.waiting.indexOf(entry);
            if (i >= 0) this.waiting.splice(i, 1);
            reject(signal!.reason);
          },
        };
        signal?.addEventListener('abort', entry.onAbort, { once: true });
        this.waiting.push(entry);
      });
    } else this.inUse++;
    let released = false;
    return {
      building: this.inUse,
      release: () => {
        if (released) return;
        released = true;
        const next = this.waiting.shift();
        // The slot passes straight to the next in line, so inUse never dips below what runs.
        if (next) next.grant();
        else this.inUse--;
      },
    };
  }
}
