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

export function Chart({
  title,
  x,
  series,
  unit,
  testId = 'metrics-chart',
}: {
  title: string;
  x: number[];
  series: ChartSeries[];
  unit: string;
  testId?: string;
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
            values: (_u, vals) => vals.map((v) => `${v}${unit}`),
          },
        ],
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
  }, [x, series, unit]);
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
