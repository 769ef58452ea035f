// Latency histograms with fixed bucket bounds: two histograms merge by adding counts, exactly,
// so percentiles read from a 1-hour row are the ones the 10-second rows would give together.

/** Upper bounds in milliseconds (inclusive); one more bucket holds everything slower. */
export const BOUNDS_MS: readonly number[] = [
  1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 75, 100, 150, 200, 300, 500, 750, 1000, 1500, 2000, 3000, 5000, 7500,
  10000, 15000, 30000, 60000,
];
export const BUCKETS = BOUNDS_MS.length + 1;
const BYTES = BUCKETS * 4;

export function newHistogram(): Uint32Array {
  return new Uint32Array(BUCKETS);
}

export function bucketOf(ms: number): number {
  // Most requests are fast: a linear scan from the bottom ends within a few steps.
  for (let i = 0; i < BOUNDS_MS.length; i++) if (ms <= BOUNDS_MS[i]!) return i;
  return BOUNDS_MS.length;
}

export function addInto(target: Uint32Array, source: Uint32Array): void {
  for (let i = 0; i < BUCKETS; i++) target[i] = (target[i]! + source[i]!) >>> 0;
}

export function encode(h: Uint32Array): Buffer {
  const b = Buffer.allocUnsafe(BYTES);
  for (let i = 0; i < BUCKETS; i++) b.writeUInt32LE(h[i]!, i * 4);
  return b;
}

/** Adds an encoded histogram into `target`; a blob of another shape is ignored, not misread. */
export function addEncoded(target: Uint32Array, blob: Uint8Array | null | undefined): void {
  if (!blob || blob.length !== BYTES) return;
  const view = new DataView(blob.buffer, blob.byteOffset, blob.byteLength);
  for (let i = 0; i < BUCKETS; i++) target[i] = (target[i]! + view.getUint32(i * 4, true)) >>> 0;
}

/**
 * The q-quantile (0..1) in milliseconds, interpolated linearly inside its bucket; 0 for an empty
 * histogram. The slowest bucket has no upper bound, so its lower bound is reported.
 */
export function quantile(h: Uint32Array, q: number): number {
  let total = 0;
  for (let i = 0; i < BUCKETS; i++) total += h[i]!;
  if (total === 0) return 0;
  const rank = q * total;
  let cum = 0;
  for (let i = 0; i < BUCKETS; i++) {
    const c = h[i]!;
    if (c === 0) continue;
    if (cum + c >= rank) {
      const lower = i === 0 ? 0 : BOUNDS_MS[i - 1]!;
      if (i === BOUNDS_MS.length) return lower;
      const upper = BOUNDS_MS[i]!;
      const v = lower + ((upper - lower) * Math.max(0, rank - cum)) / c;
      return Math.round(v * 100) / 100;
    }
    cum += c;
  }
  return BOUNDS_MS[BOUNDS_MS.length - 1]!;
}
