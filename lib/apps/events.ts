// The one event shape of the `apps` WebSocket topic: a status change (including `created` and
// `deleted`), or an engine event about one of the app's containers. Documented in docs/api.md "Real-time".
import type { Bus } from '../events/bus.js';
import type { AppStatus } from './model.js';

export type AppEvent =
  | { type: 'status'; app_id: string; app: string; status: AppStatus | 'deleted' }
  | { type: 'container'; app_id: string; app: string; service: string; container: string; action: string; status: string; at: string };

export function publishAppEvent(bus: Pick<Bus, 'publish'>, event: AppEvent): void {
  bus.publish('apps', event);
}
