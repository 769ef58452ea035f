// An app's status as the badge shows it: only the statuses an app has (not a container's `exited`
// nor a database's `error`, which travel on the same `apps` topic), each in words.
import type { AppStatus } from './api';

export const APP_STATUS_LABELS: Record<AppStatus, string> = {
  created: 'created',
  deploying: 'deploying',
  running: 'running',
  degraded: 'degraded',
  stopped: 'stopped',
  failed: 'failed',
  crash_loop: 'crash loop',
  oom: 'out of memory',
  sleeping: 'sleeping',
};

export const isAppStatus = (s: unknown): s is AppStatus =>
  typeof s === 'string' && Object.hasOwn(APP_STATUS_LABELS, s);

/**
 * An `apps` topic event that states app `id`'s own status (not a preview's, not a container's or
 * a database's event): its status, else null.
 */
export function ownStatus(d: unknown, id: string): AppStatus | null {
  if (!d || typeof d !== 'object') return null;
  const e = d as { type?: unknown; app_id?: unknown; status?: unknown; parent_app_id?: unknown };
  if (e.type !== 'status' || e.app_id !== id || e.parent_app_id !== undefined) return null;
  return isAppStatus(e.status) ? e.status : null;
}

export function AppBadge({ status }: { status: AppStatus }) {
  return (
    <span class={`badge badge-${status}`} data-testid="app-status">
      {APP_STATUS_LABELS[status] ?? status}
    </span>
  );
}
