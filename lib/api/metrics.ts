// Wire shapes of request and host metrics over a range.
import { z } from 'zod';
import { RANGE_NAMES, type RangeName } from '../series/query.js';
import { named, ts } from './common.js';

const requestPointSchema = z.object({
  t: ts,
  requests: z.number(),
  errors_4xx: z.number(),
  errors_5xx: z.number(),
  bytes_out: z.number(),
  p50_ms: z.number(),
  p95_ms: z.number(),
  p99_ms: z.number(),
});

const seriesFields = {
  range: z.enum(RANGE_NAMES as [RangeName, ...RangeName[]]),
  step_seconds: z.number().int(),
  points: z
    .array(requestPointSchema)
    .max(500)
    .describe('Oldest first, aligned to step_seconds, zero-filled gaps'),
};

export const metricsSeriesSchema = named(
  'MetricsSeries',
  z.object(seriesFields),
  "Requests through the proxy to an app's hosts, over a range",
);

export const hostMetricsSchema = named(
  'HostMetrics',
  z.object({
    ...seriesFields,
    vitals: z
      .array(
        z.object({
          t: ts,
          cpu_percent: z.number(),
          mem_used_bytes: z.number(),
          mem_total_bytes: z.number(),
          disk_used_bytes: z.number(),
          disk_total_bytes: z.number(),
          load1: z.number(),
        }),
      )
      .max(500)
      .describe('Oldest first, one per step that has a sample: a step without one is absent, never zeros'),
  }),
  "Every request through the proxy (known hosts or not) and the host's vitals, over a range",
);
