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
    const b = this.bucket(key, now);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return { ok: true };
    }
    return { ok: false, retryAfter: this.wait(b) };
  }

  /** Seconds until a token is back, without taking one; null when one is available now. */
  blocked(key: string, now = Date.now()): number | null {
    if (!this.buckets.has(key)) return null;
    const b = this.bucket(key, now);
    return b.tokens >= 1 ? null : this.wait(b);
  }

  private bucket(key: string, now: number): { tokens: number; at: number } {
    let b = this.buckets.get(key);
    if (b) {
      this.buckets.delete(key);
      b.tokens = Math.min(this.limit, b.tokens + (now - b.at) * (this.limit / this.windowMs));
      b.at = now;
    } else {
      b = { tokens: this.limit, at: now };
      if (this.buckets.size >= this.maxKeys) this.buckets.delete(this.buckets.keys().next().value!);
    }
    this.buckets.set(key, b);
    return b;
  }

  private wait(b: { tokens: number }): number {
    return Math.max(1, Math.ceil((1 - b.tokens) / (this.limit / this.windowMs) / 1000));
  }
}

// ctx.env of every handler carries it (the service registry of lib/http/handler.ts).
declare module '../http/handler.js' {
  interface Services {
    authLimiter: RateLimiter;
  }
}
