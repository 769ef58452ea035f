// A metric whose values are read when /metrics is scraped, and nothing happens between scrapes.
// prom-client's registry formats them (escaping, HELP/TYPE lines); prom-client itself is loaded
// only at the first scrape.
import type { Registry } from 'prom-client';

export interface MetricValue {
  value: number;
  labels?: Record<string, string | number>;
  /** For histograms: `<name>_bucket`, `<name>_sum`, `<name>_count`. */
  metricName?: string;
}

export interface ScrapedMetric {
  name: string;
  help: string;
  type: 'counter' | 'gauge' | 'histogram';
  values(): MetricValue[] | Promise<MetricValue[]>;
  reset?(): void;
}

/** Adds a scraped metric to a prom-client registry, in the shape its formatter reads. */
export function registerScraped(registry: Registry, m: ScrapedMetric): void {
  const metric = {
    name: m.name,
    help: m.help,
    type: m.type,
    aggregator: 'sum',
    get: async () => ({
      name: m.name,
      help: m.help,
      type: m.type,
      aggregator: 'sum',
      values: await m.values(),
    }),
    reset: () => m.reset?.(),
  };
  (registry.registerMetric as (metric: unknown) => void).call(registry, metric);
}

/** A gauge of one unlabelled value. */
export function gauge(name: string, help: string, read: () => number): ScrapedMetric {
  return { name, help, type: 'gauge', values: () => [{ value: read() }] };
}

/** A counter of one unlabelled value (a total since start). */
export function counter(name: string, help: string, read: () => number): ScrapedMetric {
  return { name, help, type: 'counter', values: () => [{ value: read() }] };
}
