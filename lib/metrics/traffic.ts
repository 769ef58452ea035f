// The traffic monitor's figures on /metrics, read at scrape time (no work between scrapes).
import type { Metrics } from './index.js';
import { counter, gauge } from './custom.js';
import type { AccessLogTailer } from '../traffic/tailer.js';
import type { TrafficMonitor } from '../traffic/monitor.js';

export function registerTrafficMetrics(
  m: Metrics,
  tailer: AccessLogTailer,
  monitor: () => TrafficMonitor | null,
): void {
  m.add(
    gauge(
      'svc_traffic_tracked_ips',
      'Source addresses currently tracked by the traffic anomaly monitor',
      () => monitor()?.stats().tracked_ips ?? 0,
    ),
  );
  m.add({
    name: 'svc_traffic_anomalies_total',
    help: 'Anomalies flagged since start, by kind',
    type: 'counter',
    values: () => {
      const a = monitor()?.stats().anomalies ?? { request_spike: 0, error_surge: 0 };
      return [
        { value: a.request_spike, labels: { kind: 'request_spike' } },
        { value: a.error_surge, labels: { kind: 'error_surge' } },
      ];
    },
  });
  m.add(
    counter('svc_access_log_lines_total', 'Access-log lines read since start', () => tailer.status().lines),
  );
  m.add(
    counter(
      'svc_access_log_parse_errors_total',
      'Access-log lines that could not be used (not JSON, missing fields, bad address, too long)',
      () => tailer.status().parseErrors,
    ),
  );
  m.add(
    gauge('svc_access_log_reading', '1 while the access log is being read', () =>
      tailer.status().reading ? 1 : 0,
    ),
  );
}
