// HTTP request counts and durations by method, route pattern and status. prom-client's Counter and
// Histogram hash their label values on every observation, which was a fifth of the cost of a
// health request; here each (method, route) series is a plain object found by one map lookup and
// only numbers change per request. The series are formatted at scrape time.
import type { MetricValue, ScrapedMetric } from './custom.js';

const BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];
const REQUESTS = 'svc_http_requests_total';
const DURATION = 'svc_http_request_duration_seconds';

interface Series {
  method: string;
  route: string;
  statuses: Map<number, number>;
  /** Per-bucket (not cumulative) counts; the last slot is +Inf. */
  buckets: Float64Array;
  sum: number;
  count: number;
}

export class RequestMetrics {
  // By route, then method: both are constant strings whose hashes V8 keeps, where a joined key
  // would be a new string to hash on every request.
  private readonly series = new Map<string, Map<string, Series>>();

  observe(method: string, route: string, status: number, seconds: number): void {
    let byMethod = this.series.get(route);
    if (!byMethod) this.series.set(route, (byMethod = new Map()));
    let s = byMethod.get(method);
    if (!s)
      byMethod.set(
        method,
        (s = {
          method,
          route,
          statuses: new Map(),
          buckets: new Float64Array(BUCKETS.length + 1),
          sum: 0,
          count: 0,
        }),
      );
    s.statuses.set(status, (s.statuses.get(status) ?? 0) + 1);
    let b = 0;
    while (b < BUCKETS.length && seconds > BUCKETS[b]!) b++;
    s.buckets[b]!++;
    s.sum += seconds;
    s.count++;
  }

  private *all(): Iterable<Series> {
    for (const byMethod of this.series.values()) yield* byMethod.values();
  }

  /** The two metrics, formatted from the series at scrape time. */
  metrics(): ScrapedMetric[] {
    const reset = () => this.series.clear();
    return [
      {
        name: REQUESTS,
        help: 'HTTP requests answered, by method, route pattern and status',
        type: 'counter',
        reset,
        values: () => {
          const out: MetricValue[] = [];
          for (const s of this.all()) {
            for (const [status, n] of s.statuses)
              out.push({ value: n, labels: { method: s.method, route: s.route, status } });
          }
          return out;
        },
      },
      {
        name: DURATION,
        help: 'HTTP request duration by method and route pattern',
        type: 'histogram',
        reset,
        values: () => {
          const out: MetricValue[] = [];
          for (const s of this.all()) {
            const labels = { method: s.method, route: s.route };
            let cumulative = 0;
            BUCKETS.forEach((le, i) => {
              cumulative += s.buckets[i]!;
              out.push({ metricName: `${DURATION}_bucket`, value: cumulative, labels: { le, ...labels } });
            });
            out.push({ metricName: `${DURATION}_bucket`, value: s.count, labels: { le: '+Inf', ...labels } });
            out.push({ metricName: `${DURATION}_sum`, value: s.sum, labels });
            out.push({ metricName: `${DURATION}_count`, value: s.count, labels });
          }
          return out;
        },
      },
    ];
  }
}
