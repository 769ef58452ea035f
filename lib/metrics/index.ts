import { Registry, collectDefaultMetrics } from 'prom-client';
import { RequestMetrics } from './requests.js';

export interface Metrics {
  registry: Registry;
  requests: RequestMetrics;
}

export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'svc_' });
  const requests = new RequestMetrics();
  requests.register(registry);
  return { registry, requests };
}
