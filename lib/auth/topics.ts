// The permission policy of WebSocket topics: the same decision (lib/auth/access.ts) as the REST
// routes that show the same facts. A per-app topic needs `app.read` on that app; a fleet topic
// needs the permission and carries only the events of apps the caller reaches. Which topic needs
// what is the topic table's (runtime/topics.ts).
import type { Principal } from '../http/handler.js';
import { allows, reachesApp } from './access.js';
import type { Permission } from './roles.js';

/** What a subscription was granted on: re-checked when the caller's access narrows. */
export interface TopicGrant {
  permission: Permission;
  /** The app the topic is about (logs:, stats:, build:), null for a fleet or instance topic. */
  appId: string | null;
}

/** Whether a subscription granted earlier is still allowed to this (possibly narrowed) principal. */
export const grantHolds = (principal: Pick<Principal, 'permissions' | 'appIds'>, g: TopicGrant): boolean =>
  allows(principal, g.permission, g.appId);

/**
 * A fleet topic's event is sent only when the app it names (if any) is within reach; a preview's,
 * when its app is. An event about
 * the instance itself (an instance backup on `backups`) needs `instance.read`, as its routes do.
 */
export function eventVisible(principal: Pick<Principal, 'appIds' | 'permissions'>, data: unknown): boolean {
  if (data === null || typeof data !== 'object') return true;
  if ('instance_id' in data && !allows(principal, 'instance.read', null)) return false;
  if (principal.appIds === null) return true;
  // A preview's event is its app's: reached with that app's access (lib/apps/events.ts PreviewScope).
  const { app_id: app, parent_app_id: parent } = data as { app_id?: unknown; parent_app_id?: unknown };
  if (typeof parent === 'string') return reachesApp(principal, parent);
  return typeof app !== 'string' || reachesApp(principal, app);
}
