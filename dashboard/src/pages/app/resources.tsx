// CPU and memory of the app's services over the Metrics tab's range (and service), from the
// resource history: one line per service; memory drawn against its limit. Steps without a sample
// are gaps, never zeros.
import { useEffect, useMemo } from 'preact/hooks';
import { resourceHistory, type ResourcePoint } from '../../observe-api';
import { ErrorNote, useLoad } from '../../ui';
import type { ChartSeries } from './chart';

type ChartModule = typeof import('./chart');

const COLOURS = ['#3b82f6', '#16a34a', '#d97706', '#9333ea', '#dc2626', '#0891b2'];
const MiB = 1024 * 1024;

/** Aligned columns: x (epoch seconds) and one column per service, null where it has no point. */
export function columns(items: ResourcePoint[], pick: (p: ResourcePoint) => number) {
  const times = [...new Set(items.map((i) => Date.parse(i.at) / 1000))].sort((a, b) => a - b);
  const index = new Map(times.map((t, i) => [t, i]));
  const services = [...new Set(items.map((i) => i.service))].sort();
  const cols = new Map(services.map((s) => [s, new Array<number | null>(times.length).fill(null)]));
  for (const i of items) cols.get(i.service)![index.get(Date.parse(i.at) / 1000)!] = pick(i);
  return { x: times, services, cols };
}

export function ResourceCharts(props: {
  id: string;
  range: string;
  service: string;
  mod: ChartModule | null;
}) {
  const history = useLoad(
    () => resourceHistory(props.id, props.range, props.service || undefined),
    [props.id, props.range, props.service],
  );
  useEffect(() => {
    const t = setInterval(() => void history.reload(), 30_000);
    return () => clearInterval(t);
  }, [history.reload]);
  const charts = useMemo(() => {
    const items = history.data?.items;
    if (!items) return null;
    const cpu = columns(items, (p) => p.cpu_percent);
    const mem = columns(items, (p) => Math.round(p.memory_bytes / MiB));
    const limit = columns(items, (p) => Math.round(p.memory_limit_bytes / MiB));
    const lines = (c: typeof cpu, suffix = ''): ChartSeries[] =>
      c.services.map((s, i) => ({
        label: `${s || 'app'}${suffix}`,
        values: c.cols.get(s)!,
        color: COLOURS[i % COLOURS.length]!,
      }));
    const restarts = items.reduce((n, p) => n + p.restarts, 0);
    return {
      x: cpu.x,
      cpu: lines(cpu),
      memory: [
        ...lines(mem),
        ...(mem.services.length === 1 ? lines(limit, ' limit').map((l) => ({ ...l, color: '#9ca3af' })) : []),
      ],
      restarts,
      empty: items.length === 0,
    };
  }, [history.data]);
  return (
    <section aria-labelledby="resources-h" data-testid="resources">
      <h3 id="resources-h">CPU and memory</h3>
      <ErrorNote error={history.error} />
      {charts?.empty && (
        <p class="muted">
          No resource samples in this range yet (the app's containers are read every few seconds while they
          run).
        </p>
      )}
      {charts && !charts.empty && (
        <p class="small" data-testid="resources-summary">
          {charts.restarts} restart{charts.restarts === 1 ? '' : 's'} over the range
        </p>
      )}
      {charts && !charts.empty && props.mod && (
        <div class="charts">
          <props.mod.Chart
            title="CPU (% of one core)"
            x={charts.x}
            series={charts.cpu}
            unit="%"
            testId="resource-chart"
          />
          <props.mod.Chart
            title="Memory"
            x={charts.x}
            series={charts.memory}
            unit=" MiB"
            testId="resource-chart"
          />
        </div>
      )}
    </section>
  );
}
