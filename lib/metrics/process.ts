// Process figures for /metrics, read at scrape time. Written here rather than taken from
// prom-client's default collectors: those start counting CPU when they are registered (not at
// process start), watch every garbage collection, sample the event loop continuously and load
// a tracing API at boot. These are totals since start and cost nothing between scrapes.
import { readdir, readFile } from 'node:fs/promises';
import type { MetricValue, ScrapedMetric } from './custom.js';

const startSeconds = Math.round(Date.now() / 1000 - process.uptime());

async function procStatus(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  try {
    const text = await readFile('/proc/self/status', 'utf8');
    for (const m of text.matchAll(/^(VmSize|VmData):\s+(\d+) kB$/gm)) out[m[1]!] = Number(m[2]) * 1024;
  } catch {
    /* not Linux */
  }
  return out;
}

async function openFds(): Promise<number | null> {
  try {
    return (await readdir('/proc/self/fd')).length - 1; // the directory handle readdir opened
  } catch {
    return null;
  }
}

async function maxFds(): Promise<number | null> {
  try {
    const m = /^Max open files\s+(\d+)/m.exec(await readFile('/proc/self/limits', 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/** How long a callback queued now waits for the event loop. */
function loopLag(): Promise<number> {
  const t = process.hrtime.bigint();
  return new Promise((resolve) => setImmediate(() => resolve(Number(process.hrtime.bigint() - t) / 1e9)));
}

export function processMetrics(prefix: string): ScrapedMetric[] {
  const one = (value: number | null): MetricValue[] => (value === null ? [] : [{ value }]);
  const [major, minor, patch] = process.versions.node.split('.');
  return [
    {
      name: `${prefix}process_cpu_user_seconds_total`,
      help: 'Total user CPU time spent in seconds.',
      type: 'counter',
      values: () => one(process.cpuUsage().user / 1e6),
    },
    {
      name: `${prefix}process_cpu_system_seconds_total`,
      help: 'Total system CPU time spent in seconds.',
      type: 'counter',
      values: () => one(process.cpuUsage().system / 1e6),
    },
    {
      name: `${prefix}process_cpu_seconds_total`,
      help: 'Total user and system CPU time spent in seconds.',
      type: 'counter',
      values: () => {
        const u = process.cpuUsage();
        return one((u.user + u.system) / 1e6);
      },
    },
    {
      name: `${prefix}process_start_time_seconds`,
      help: 'Start time of the process since unix epoch in seconds.',
      type: 'gauge',
      values: () => one(startSeconds),
    },
    {
      name: `${prefix}process_resident_memory_bytes`,
      help: 'Resident memory size in bytes.',
      type: 'gauge',
      values: () => one(process.memoryUsage.rss()),
    },
    {
      name: `${prefix}process_virtual_memory_bytes`,
      help: 'Virtual memory size in bytes.',
      type: 'gauge',
      values: async () => one((await procStatus()).VmSize ?? null),
    },
    {
      name: `${prefix}process_heap_bytes`,
      help: 'Process heap size in bytes.',
      type: 'gauge',
      values: async () => one((await procStatus()).VmData ?? null),
    },
    {
      name: `${prefix}process_open_fds`,
      help: 'Number of open file descriptors.',
      type: 'gauge',
      values: async () => one(await openFds()),
    },
    {
      name: `${prefix}process_max_fds`,
      help: 'Maximum number of open file descriptors.',
      type: 'gauge',
      values: async () => one(await maxFds()),
    },
    {
      name: `${prefix}nodejs_eventloop_lag_seconds`,
      help: 'Lag of event loop in seconds.',
      type: 'gauge',
      values: async () => one(await loopLag()),
    },
    {
      name: `${prefix}nodejs_active_resources`,
      help: 'Number of active resources keeping the event loop alive.',
      type: 'gauge',
      values: () => one(process.getActiveResourcesInfo().length),
    },
    {
      name: `${prefix}nodejs_heap_size_total_bytes`,
      help: 'Process heap size from Node.js in bytes.',
      type: 'gauge',
      values: () => one(process.memoryUsage().heapTotal),
    },
    {
      name: `${prefix}nodejs_heap_size_used_bytes`,
      help: 'Process heap size used from Node.js in bytes.',
      type: 'gauge',
      values: () => one(process.memoryUsage().heapUsed),
    },
    {
      name: `${prefix}nodejs_external_memory_bytes`,
      help: 'Node.js external memory size in bytes.',
      type: 'gauge',
      values: () => one(process.memoryUsage().external),
    },
    {
      name: `${prefix}nodejs_version_info`,
      help: 'Node.js version info.',
      type: 'gauge',
      values: () => [
        {
          value: 1,
          labels: {
            version: process.version,
            major: Number(major),
            minor: Number(minor),
            patch: Number(patch),
          },
        },
      ],
    },
  ];
}
