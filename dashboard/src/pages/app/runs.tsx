// How a run is shown wherever runs are listed: its status with why, and how long it took.
import type { Run } from '../../api';
import { Badge } from '../../ui';

/** How long a run took (or has been running), for people. */
export function duration(r: Pick<Run, 'started_at' | 'finished_at'>): string {
  if (!r.started_at) return '—';
  const ms = (r.finished_at ? Date.parse(r.finished_at) : Date.now()) - Date.parse(r.started_at);
  if (ms < 1000) return `${ms} ms`;
  if (ms < 120_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.round(ms / 60_000)} min`;
}

export function RunStatus({ run }: { run: Run }) {
  return (
    <>
      <Badge status={run.status} />
      {run.exit_code !== null && run.status !== 'succeeded' && (
        <span class="muted small"> exit {run.exit_code}</span>
      )}
      {run.reason && <div class="muted small">{run.reason}</div>}
    </>
  );
}
