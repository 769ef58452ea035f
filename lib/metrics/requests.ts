// HTTP request counts and durations by method, route pattern and status. prom-client's Counter and
// Histogram hash their label values on every observation, which was a fifth of the cost of a
// health request; here each (method, route) series is a plain object found by one map lookup and
// only numbers change per request. The registry formats the series at scrape time, with the same
// names, labels and buckets as before.
import type { Registry } from 'prom-client';

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

interface MetricValue {
  value: number;
  labels: Record<string, string | number>;
  metricName?: string;
}

export class RequestMetrics {
  private readonly series = new Map<string, Series>();

  observe(method: string, route: string, status: number, seconds: number): void {
    const key = method + ' ' + route;
    let s = this.series.get(key);
    if (!s) this.series.set(key, (s = { method, route, statuses: new Map(), buckets: new Float64Array(BUCKETS.length + 1), sum: 0, count: 0 }));
    s.statuses.set(status, (s.statuses.get(status) ?? 0) + 1);
    let b = 0;
    while (b < BUCKETS.length && seconds > BUCKETS[b]!) b++;
    s.buckets[b]!++;
    s.sum += seconds;
    s.count++;
  }

  /** Adds both metrics to a prom-client registry (they are read at scrape time only). */
  register(registry: Registry): void {
    const metric = (name: string, help: string, type: 'counter' | 'histogram', values: () => MetricValue[]) => ({
      name,
      help,
      type,
      aggregator: 'sum',
      get: async () => ({ name, help, type, aggregator: 'sum', values: values() }),
      reset: () => this.series.clear(),
    });
    const add = (m: ReturnType<typeof metric>) => (registry.registerMetric as (m: unknown) => void).call(registry, m);
    add(
      metric(REQUESTS, 'HTTP requests answered, by method, route pattern and status', 'counter', () => {
        const out: MetricValue[] = [];
        for (const s of this.series.values()) {
          for (const [status, n] of s.statuses) out.push({ value: n, labels: { method: s.method, route: s.route, status } });
        }
        return out;
      }),
    );
    add(
      metric(DURATION, 'HTTP request duration by method and route pattern', 'histogram', () => {
        const out: MetricValue[] = [];
        for (const s of this.series.values()) {
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
      }),
    );
  }
}
