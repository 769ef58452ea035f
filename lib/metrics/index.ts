// /metrics: request figures kept by the runtime, process figures and whatever subsystems add,
// all read at scrape time. prom-client formats the exposition and is loaded at the first scrape,
// so a service nobody scrapes never loads it.
import type { Registry } from 'prom-client';
import { RequestMetrics } from './requests.js';
import { processMetrics } from './process.js';
import { registerScraped, type ScrapedMetric } from './custom.js';

// ctx.env of every handler carries it (the service registry of lib/http/handler.ts).
declare module '../http/handler.js' {
  interface Services {
    metrics: Metrics;
  }
}

export interface Metrics {
  requests: RequestMetrics;
  /** Adds a metric read at scrape time. */
  add(metric: ScrapedMetric): void;
  /** The exposition text and its content type. */
  render(): Promise<{ text: string; contentType: string }>;
}

export const METRIC_PREFIX = 'svc_';

export function createMetrics(): Metrics {
  const requests = new RequestMetrics();
  const scraped: ScrapedMetric[] = [...processMetrics(METRIC_PREFIX), ...requests.metrics()];
  let registry: Registry | null = null;
  return {
    requests,
    add(metric) {
      scraped.push(metric);
      if (registry) registerScraped(registry, metric);
    },
    async render() {
      if (!registry) {
        const { Registry } = await import('prom-client');
        const r = new Registry();
        for (const m of scraped) registerScraped(r, m);
        registry = r;
      }
      return { text: await registry.metrics(), contentType: registry.contentType };
    },
  };
}
