// Request metrics per range (and per service), as charts, and the services' CPU and memory. uPlot arrives with ./chart, imported on
// first render of this tab only; totals are shown as text too (screen readers, quick reading).
import { useEffect, useMemo, useState } from 'preact/hooks';
import * as api from '../../api';
import type { MetricsRange } from '../../api';
import { ErrorNote, useLoad } from '../../ui';
import { bytes } from './format';
import { ResourceCharts } from './resources';

type ChartModule = typeof import('./chart');
let chartModule: Promise<ChartModule> | null = null;
const loadChart = () => (chartModule ??= import('./chart'));

const RANGES: MetricsRange[] = ['1h', '6h', '24h', '7d', '30d'];

export function MetricsTab({ id }: { id: string }) {
  const [range, setRange] = useState<MetricsRange>('1h');
  const [service, setService] = useState('');
  const services = useLoad(() => api.listServices(id).then((r) => r.items), [id]);
  const metrics = useLoad(() => api.appMetrics(id, range, service || undefined), [id, range, service]);
  const [mod, setMod] = useState<ChartModule | null>(null);
  const [modError, setModError] = useState<unknown>(null);
  useEffect(() => {
    loadChart().then(setMod, setModError);
  }, []);
  // New data every 30 s while the tab is open: the finest step is 10 s, so this stays cheap.
  useEffect(() => {
    const t = setInterval(() => void metrics.reload(), 30_000);
    return () => clearInterval(t);
  }, [metrics.reload]);

  const data = metrics.data;
  const series = useMemo(() => {
    if (!data) return null;
    const x = data.points.map((p) => (typeof p.t === 'number' ? p.t : Date.parse(p.t) / 1000));
    const col = (k: 'requests' | 'errors_4xx' | 'errors_5xx' | 'p50_ms' | 'p95_ms' | 'p99_ms') =>
      data.points.map((p) => Number(p[k] ?? 0));
    return {
      x,
      requests: [
        { label: 'requests', values: col('requests'), color: '#3b82f6' },
        { label: '4xx', values: col('errors_4xx'), color: '#d97706' },
        { label: '5xx', values: col('errors_5xx'), color: '#dc2626' },
      ],
      latency: [
        { label: 'p50', values: col('p50_ms'), color: '#16a34a' },
        { label: 'p95', values: col('p95_ms'), color: '#d97706' },
        { label: 'p99', values: col('p99_ms'), color: '#dc2626' },
      ],
      totals: data.points.reduce(
        (a, p) => ({
          requests: a.requests + p.requests,
          e4: a.e4 + p.errors_4xx,
          e5: a.e5 + p.errors_5xx,
          bytes: a.bytes + p.bytes_out,
        }),
        {
          requests: 0,
          e4: 0,
          e5: 0,
          bytes: 0,
        },
      ),
    };
  }, [data]);

  return (
    <section class="card" aria-labelledby="metrics-h">
      <h2 id="metrics-h">Request metrics</h2>
      <div class="row wrap">
        <div class="row" role="group" aria-label="Range">
          {RANGES.map((r) => (
            <button key={r} type="button" aria-pressed={range === r} onClick={() => setRange(r)}>
              {r}
            </button>
          ))}
        </div>
        <label>
          Service
          <select value={service} onChange={(e) => setService((e.target as HTMLSelectElement).value)}>
            <option value="">All services</option>
            {services.data?.map((s) => (
              <option key={s.name} value={s.name}>
                {s.name}
              </option>
            ))}
          </select>
        </label>
        <button type="button" onClick={() => void metrics.reload()}>
          Refresh
        </button>
      </div>
      <ErrorNote error={metrics.error ?? modError} />
      {series && series.totals.requests === 0 && (
        <p class="notice" data-testid="metrics-empty">
          No requests in the last {range}. Requests that reach the app through its URLs (the proxy) are
          counted here, per {data!.step_seconds} s step; an app without a URL, or a proxy that is not running,
          shows none.
        </p>
      )}
      {series && (
        <p data-testid="metrics-totals">
          {Math.round(series.totals.requests)} request{Math.round(series.totals.requests) === 1 ? '' : 's'},{' '}
          {Math.round(series.totals.e4)} 4xx, {Math.round(series.totals.e5)} 5xx, {bytes(series.totals.bytes)}{' '}
          sent
          <span class="muted">
            {' '}
            over {range}, step {data!.step_seconds} s
          </span>
        </p>
      )}
      {series && mod && (
        <div class="charts">
          <mod.Chart title="Requests per step" x={series.x} series={series.requests} unit="" integer />
          <mod.Chart title="Latency" x={series.x} series={series.latency} unit=" ms" />
        </div>
      )}
      {(!series || !mod) && !metrics.error && !modError && <p class="muted">Loading…</p>}
      <ResourceCharts id={id} range={range} service={service} mod={mod} />
    </section>
  );
}
