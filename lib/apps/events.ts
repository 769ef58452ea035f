// The one event shape of the `apps` WebSocket topic: a status change (including `created` and
// `deleted`), an engine event about one of the app's containers, or the app going to sleep and
// waking (lib/apps/sleep.ts). Documented in docs/api.md "Real-time".
import type { Bus } from '../events/bus.js';
import type { AppStatus } from './model.js';

export type AppEvent =
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
    };

export function publishAppEvent(bus: Pick<Bus, 'publish'>, event: AppEvent): void {
  bus.publish('apps', event);
}
