// A drain's bounded buffer: lines wait here while their receiver is slow or away. Full (lines or
// bytes) means the oldest waiting line is dropped and counted, so the newest are kept and taking
// a line in is always O(1): the app and the log reader never wait on a receiver.
import type { DrainLine } from './kinds/index.js';

/** Bytes one waiting line is counted for besides its text (the object around it). */
const LINE_OVERHEAD = 160;

export class LineBuffer {
  private ring: Array<DrainLine | undefined>;
  private head = 0;
  private size = 0;
  private bytes = 0;
  /** Lines dropped since the last take of the count. */
  private droppedSince = 0;

  constructor(
    readonly maxLines: number,
    readonly maxBytes: number,
  ) {
    this.ring = new Array(Math.min(1024, maxLines));
  }

  get length(): number {
    return this.size;
  }

  get byteSize(): number {
    return this.bytes;
  }

  push(l: DrainLine): void {
    const cost = l.line.length + LINE_OVERHEAD;
    while (this.size > 0 && (this.size >= this.maxLines || this.bytes + cost > this.maxBytes)) {
      this.dropOldest();
      this.droppedSince++;
    }
    if (this.size === this.ring.length) this.grow();
    this.ring[(this.head + this.size) % this.ring.length] = l;
    this.size++;
    this.bytes += cost;
  }

  /** Up to `n` lines (and about `maxBytes`), oldest first, taken out. */
  take(n: number, maxBytes: number): DrainLine[] {
    const out: DrainLine[] = [];
    let bytes = 0;
    while (this.size > 0 && out.length < n && (out.length === 0 || bytes < maxBytes)) {
      const l = this.ring[this.head]!;
      bytes += l.line.length + LINE_OVERHEAD;
      out.push(l);
      this.dropOldest();
    }
    return out;
  }

  /** Lines dropped for room since the previous call. */
  takeDropped(): number {
    const n = this.droppedSince;
    this.droppedSince = 0;
    return n;
  }

  clear(): number {
    const n = this.size;
    this.ring = new Array(Math.min(1024, this.maxLines));
    this.head = 0;
    this.size = 0;
    this.bytes = 0;
    return n;
  }

  private dropOldest(): void {
    const l = this.ring[this.head]!;
    this.ring[this.head] = undefined;
    this.head = (this.head + 1) % this.ring.length;
    this.size--;
    this.bytes -= l.line.length + LINE_OVERHEAD;
  }

  private grow(): void {
    const next = new Array<DrainLine | undefined>(Math.min(this.maxLines, this.ring.length * 2));
    for (let i = 0; i < this.size; i++) next[i] = this.ring[(this.head + i) % this.ring.length];
    this.ring = next;
    this.head = 0;
  }
}
