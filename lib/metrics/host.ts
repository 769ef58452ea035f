// Host vitals on /metrics: the vitals sampler's latest sample, read at scrape time (the same
// sample the `host` topic shows and /api/host/metrics stores), so a scrape never reads /proc.
import type { Metrics } from './index.js';
import { gauge } from './custom.js';
import type { VitalsSampler } from '../series/vitals.js';

export function registerHostMetrics(m: Metrics, vitals: VitalsSampler): void {
  const v = () => vitals.latest();
  m.add(gauge('svc_host_cpu_percent', 'Host CPU busy share over the last sampling interval, in percent', () => v()?.cpu_percent ?? 0));
  m.add(gauge('svc_host_memory_used_bytes', 'Host memory in use (total minus available)', () => v()?.mem_used_bytes ?? 0));
  m.add(gauge('svc_host_memory_total_bytes', 'Host memory', () => v()?.mem_total_bytes ?? 0));
  m.add(gauge('svc_host_disk_used_bytes', 'Used bytes of the file system holding the data directory', () => v()?.disk_used_bytes ?? 0));
  m.add(gauge('svc_host_disk_total_bytes', 'Size of the file system holding the data directory', () => v()?.disk_total_bytes ?? 0));
  m.add(gauge('svc_host_load1', 'Host load average over one minute', () => v()?.load1 ?? 0));
}
