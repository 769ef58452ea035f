// The metrics endpoints' answers: pending buckets written first (rows add up exactly, so an early
// flush costs nothing), then the range read in the contract's shape.
import type { Services } from '../http/handler.js';
import {
  parseRange,
  queryHost,
  queryRequests,
  type HostSeriesAnswer,
  type RequestSeriesAnswer,
} from './query.js';

export function appMetrics(
  env: Pick<Services, 'db' | 'series' | 'now'>,
  appId: string,
  q: { range?: unknown; service?: string },
): RequestSeriesAnswer {
  const range = parseRange(q.range);
  env.series.flush(true);
  return queryRequests(env.db, { appId, service: q.service, range, now: env.now() });
}

export function hostMetrics(
  env: Pick<Services, 'db' | 'series' | 'now'>,
  q: { range?: unknown },
): HostSeriesAnswer {
  const range = parseRange(q.range);
  env.series.flush(true);
  return queryHost(env.db, { range, now: env.now() });
}
