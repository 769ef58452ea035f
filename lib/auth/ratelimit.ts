// Token bucket per key: `limit` attempts per `windowMs`, refilled smoothly; the key table is bounded.
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly maxKeys = 10_000,
  ) {}

  /** Takes one token; `retryAfter` (seconds) when none is left. */
  hit(key: string, now = Date.now()): { ok: true } | { ok: false; retryAfter: number } {
    const rate = this.limit / this.windowMs;
    let b = this.buckets.get(key);
    if (b) {
      this.buckets.delete(key);
      b.tokens = Math.min(this.limit, b.tokens + (now - b.at) * rate);
      b.at = now;
    } else {
      b = { tokens: this.limit, at: now };
      if (this.buckets.size >= this.maxKeys) this.buckets.delete(this.buckets.keys().next().value!);
    }
    this.buckets.set(key, b);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return { ok: true };
    }
    return { ok: false, retryAfter: Math.max(1, Math.ceil((1 - b.tokens) / rate / 1000)) };
  }
}
