// A sparkline drawn as one SVG polyline: the overview shows host vitals without loading a chart
// library on the first page (uPlot stays with the pages that chart ranges).
export function Sparkline({
  values,
  max,
  label,
  width = 160,
  height = 32,
}: {
  values: number[];
  max?: number;
  label: string;
  width?: number;
  height?: number;
}) {
  const top = max ?? Math.max(1, ...values);
  const n = values.length;
  const points = values
    .map(
      (v, i) =>
        `${n <= 1 ? width : ((i / (n - 1)) * width).toFixed(1)},${(height - 1 - (Math.min(v, top) / top) * (height - 2)).toFixed(1)}`,
    )
    .join(' ');
  return (
    <svg
      class="spark"
      width={width}
      height={height}
      viewBox={`0 0 ${width} ${height}`}
      role="img"
      aria-label={label}
    >
      <title>{label}</title>
      {n > 0 && (
        <polyline
          points={points}
          fill="none"
          stroke="currentColor"
          stroke-width="1.5"
          vector-effect="non-scaling-stroke"
        />
      )}
    </svg>
  );
}

export function bytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '—';
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v >= 10 || u === 0 ? v.toFixed(0) : v.toFixed(1)} ${units[u]}`;
}
