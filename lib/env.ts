// The services handed to every handler as `ctx.env`. Tests and other hosts build their own.
import type { Config } from './config.js';
import type { Db } from './db/index.js';
import type { Bus } from './events/bus.js';
import type { Sealer } from './crypto/seal.js';
import type { Logger } from './log.js';
import type { Metrics } from './metrics/index.js';
import type { RateLimiter } from './auth/ratelimit.js';

export interface Env {
  config: Config;
  db: Db;
  bus: Bus;
  sealer: Sealer;
  log: Logger;
  metrics: Metrics;
  /** Signs `svc_pre` and derives CSRF tokens; generated once per instance. */
  signingKey: Uint8Array;
  authLimiter: RateLimiter;
  now: () => number;
}
