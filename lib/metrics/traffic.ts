// The traffic monitor's figures on /metrics, read at scrape time (no work between scrapes).
import { Gauge } from 'prom-client';
import type { Metrics } from './index.js';
import type { AccessLogTailer } from '../traffic/tailer.js';
import type { TrafficMonitor } from '../traffic/monitor.js';

export function registerTrafficMetrics(m: Metrics, tailer: AccessLogTailer, monitor: () => TrafficMonitor | null): void {
  new Gauge({
    name: 'svc_traffic_tracked_ips',
    help: 'Source addresses currently tracked by the traffic anomaly monitor',
    registers: [m.registry],
    collect() {
      this.set(monitor()?.stats().tracked_ips ?? 0);
    },
  });
  new Gauge({
    name: 'svc_traffic_anomalies_total',
    help: 'Anomalies flagged since start, by kind',
    labelNames: ['kind'] as const,
    registers: [m.registry],
    collect() {
      const a = monitor()?.stats().anomalies ?? { request_spike: 0, error_surge: 0 };
      this.set({ kind: 'request_spike' }, a.request_spike);
      this.set({ kind: 'error_surge' }, a.error_surge);
    },
  });
  new Gauge({
    name: 'svc_access_log_lines_total',
    help: 'Access-log lines read since start',
    registers: [m.registry],
    collect() {
      this.set(tailer.status().lines);
    },
  });
  new Gauge({
    name: 'svc_access_log_parse_errors_total',
    help: 'Access-log lines that could not be used (not JSON, missing fields, bad address, too long)',
    registers: [m.registry],
    collect() {
      this.set(tailer.status().parseErrors);
    },
  });
  new Gauge({
    name: 'svc_access_log_reading',
    help: '1 while the access log is being read',
    registers: [m.registry],
    collect() {
      this.set(tailer.status().reading ? 1 : 0);
    },
  });
}
