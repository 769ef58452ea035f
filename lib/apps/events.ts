// The one event shape of the `apps` WebSocket topic: a status change (including `created` and
// `deleted`), an engine event about one of the app's containers, or the app going to sleep and
// waking (lib/sleep/index.ts). Documented in docs/api.md "Real-time".
import type { Bus } from '../events/bus.js';
import type { Db } from '../db/index.js';
import type { AppStatus } from './model.js';
import { previewOf } from './store.js';

/**
 * Set on the events of a preview's own app row (`<app>-pr-<n>`): the app it previews and its
 * number, so a listener can attribute them and an operator limited to that app receives them.
 */
export interface PreviewScope {
  parent_app_id: string;
  preview_number: number;
}

export type AppEvent = (
  | { type: 'status'; app_id: string; app: string; status: AppStatus | 'deleted' }
  | {
      type: 'sleeping';
      app_id: string;
      app: string;
      idle_minutes: number;
      memory_bytes: number | null;
      at: string;
    }
  | { type: 'waking'; app_id: string; app: string; at: string }
  | { type: 'woken'; app_id: string; app: string; duration_ms: number; at: string }
  | { type: 'wake_failed'; app_id: string; app: string; error: string; at: string }
  | {
      type: 'container';
      app_id: string;
      app: string;
      service: string;
      container: string;
      action: string;
      status: string;
      at: string;
    }
) &
  Partial<PreviewScope>;

/** The preview fields of app `appId`'s events: none for an app that is not a preview. */
export async function previewScope(db: Db, appId: string): Promise<PreviewScope | Record<never, never>> {
  const row = await previewOf(db, appId);
  return row ? { parent_app_id: row.app_id, preview_number: row.number } : {};
}

export function publishAppEvent(bus: Pick<Bus, 'publish'>, event: AppEvent): void {
  bus.publish('apps', event);
}
