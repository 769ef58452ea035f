// uPlot charts, in their own chunk: the metrics tab imports this module dynamically, so the
// library and its stylesheet load only when an operator opens that tab.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface ChartSeries {
  label: string;
  /** null: no point at that time (a gap in the line). */
  values: Array<number | null>;
  color: string;
}

/** Room for the longest y label (uPlot's default width clips "1,000 ms"). */
function labelWidth(values: readonly string[] | null): number {
  const longest = Math.max(1, ...(values ?? []).map((v) => v.length));
  return Math.max(36, Math.ceil(longest * 7.5) + 18);
}

/** A y tick: counts are whole numbers (no "0.5 requests"); the rest keeps one decimal at most. */
export function tickLabel(v: number, unit: string, integer: boolean): string {
  const n = integer ? Math.round(v) : Math.round(v * 10) / 10;
  return `${n.toLocaleString('en-US')}${unit}`;
}

export function Chart({
  title,
  x,
  series,
  unit,
  testId = 'metrics-chart',
  integer = false,
}: {
  title: string;
  x: number[];
  series: ChartSeries[];
  unit: string;
  testId?: string;
  /** Counts: ticks on whole numbers only. */
  integer?: boolean;
}) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const width = () => Math.max(280, el.clientWidth);
    const plot = new uPlot(
      {
        width: width(),
        height: 200,
        // The legend is drawn by us as text next to the chart; uPlot's own is a table without headers.
        legend: { show: false },
        cursor: { drag: { x: false, y: false } },
        axes: [
          {
            stroke: 'currentColor',
            grid: { stroke: 'rgba(128,128,128,0.2)' },
            ticks: { stroke: 'rgba(128,128,128,0.4)' },
          },
          {
            stroke: 'currentColor',
            grid: { stroke: 'rgba(128,128,128,0.2)' },
            ticks: { stroke: 'rgba(128,128,128,0.4)' },
            values: (_u, vals) => vals.map((v) => tickLabel(v, unit, integer)),
            size: (_u, values) => labelWidth(values),
            // Whole steps for counts (uPlot would otherwise split 0..1 into 0.2s).
            ...(integer
              ? { incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 100_000] }
              : {}),
          },
        ],
        scales: integer ? { y: { range: (_u, min, max) => [0, Math.max(1, Math.ceil(max), min)] } } : {},
        series: [
          {},
          ...series.map((s) => ({ label: s.label, stroke: s.color, width: 1.5, points: { show: false } })),
        ],
      },
      [x, ...series.map((s) => s.values)],
      el,
    );
    const ro = new ResizeObserver(() => plot.setSize({ width: width(), height: 200 }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      plot.destroy();
    };
  }, [x, series, unit, integer]);
  return (
    <figure class="chart">
      <figcaption>
        {title}
        {series.map((s) => (
          <span key={s.label} class="legend">
            <span class="swatch" style={{ background: s.color }} aria-hidden="true" /> {s.label}
          </span>
        ))}
      </figcaption>
      <div ref={box} class="chart-plot" role="img" aria-label={`${title} chart`} data-testid={testId} />
    </figure>
  );
}
