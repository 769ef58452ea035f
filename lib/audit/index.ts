import { dialectOf, sql } from '../db/kysely.js';
import type { Db } from '../db/index.js';
import { nowIso } from '../db/index.js';
import type { State } from './kinds.js';
import { isStateKind } from './kinds.js';

export const ACTOR_TYPES = ['user', 'token', 'system'] as const;
export type ActorType = (typeof ACTOR_TYPES)[number];
/** ok: answered 1xx-3xx; error otherwise. */
export const AUDIT_OUTCOMES = ['ok', 'error'] as const;
export type AuditOutcome = (typeof AUDIT_OUTCOMES)[number];

/** An entry's action: the method and the route's pattern as the OpenAPI document writes it. */
export const routeAction = (method: string, pattern: string) =>
  `${method} ${pattern.replace(/:(\w+)\+?/g, '{$1}')}`;

export interface AuditEntryInput {
  /**
   * `<METHOD> <route pattern>` (OpenAPI form, `/api/apps/{id}/env`) of the route that caused the
   * entry: the request's own route, or for background work the route that started it.
   */
  route: string;
  /** Default: `token` when `via` is, `user` when an operator is named, `system` otherwise. */
  actorType?: ActorType;
  /** The operator (for a token: its owner). */
  actorId?: string | null;
  actor?: string | null;
  /** The API token that acted. */
  tokenId?: string | null;
  via?: string | null;
  /** What happened, finer than the route (`auth.totp_failed` on POST /api/auth/totp); default the route. */
  event?: string | null;
  /** A short sentence; default the route's summary, or the event's own sentence. */
  summary?: string | null;
  target?: string | null;
  ip?: string | null;
  /** The HTTP status the request was answered with (101 for a WebSocket, 500 for failed background work). */
  outcome: number;
  /** Safe, non-secret facts only: never a value, a password, a token or a key. */
  detail?: Record<string, unknown> | null;
  /** The target's state around the change (lib/revert/state.ts): secrets only masked or sealed. */
  state?: { kind: string; id: string; before: State | null; after: State | null } | null;
  /** This entry reverts that one: the original learns which entry reverted it. */
  revertOf?: number | null;
  /** The app the entry concerns; default: the target of an app route (`/api/apps/{id}...`). */
  appId?: string | null;
}

// Routes whose target is an app: its own routes, the forge's deliveries, and the ones that create one.
const APP_ACTION =
  /^[A-Z]+ (?:\/api\/apps\/\{id\}(?:\/|$)|\/webhooks\/\{appID\}$|\/api\/apps$|\/api\/apps\/import$|\/api\/addons\/\{id\}\/install$)/;

/** Events whose sentence says more than their route's summary. */
const EVENT_SUMMARIES: Record<string, string> = {
  'auth.login_failed': 'Sign-in refused: wrong username or password',
  'auth.totp_failed': 'Second factor refused: wrong or already used code',
  'auth.oidc_refused': 'Sign-in with the identity provider refused',
  'app.shell_opened': 'Opened a shell in a service',
  'app.shell_closed': 'Closed a shell',
  'backup.restore_finished': 'Restore from a backup finished',
  'webhook.duplicate': 'Webhook delivery ignored as a repeat',
  'webhook.deploy_queued': 'Webhook delivery queued a deployment',
  'app.sleeping': 'App went to sleep after its idle time',
  'app.woken': 'App woken by a request',
  'app.wake_failed': 'App could not be woken',
  'app.deploy_hook': 'Deploy hook called: pull and redeploy',
};

/** The first clause of a route's summary: "Cancel a deployment (409 when ...)" -> "Cancel a deployment". */
export function shortSummary(text: string): string {
  const cut = text.search(/ \(|: | -> /);
  return (cut > 0 ? text.slice(0, cut) : text).trim();
}

function sentence(e: AuditEntryInput): string {
  const base =
    (e.event && EVENT_SUMMARIES[e.event]) ??
    (e.summary ? shortSummary(e.summary) : null) ??
    e.event ??
    e.route;
  if (e.event === 'audit.reverted' && e.detail?.revert_of)
    return `Reverted audit entry ${String(e.detail.revert_of)}`;
  const saysRefused =
    e.event === 'auth.login_failed' || e.event === 'auth.totp_failed' || e.event === 'auth.oidc_refused';
  return e.outcome < 400 || saysRefused ? base : `${base} (failed)`;
}

/** Writes one entry (and links a revert to its original in the same transaction); answers its id. */
export async function recordAudit(db: Db, e: AuditEntryInput): Promise<number> {
  const actorType: ActorType =
    e.actorType ?? (e.via === 'token' ? 'token' : e.actorId != null || e.actor != null ? 'user' : 'system');
  return db.transaction().execute(async (tx) => {
    const r = await tx
      .insertInto('audit')
      .values({
        at: nowIso(),
        actor_id: e.actorId ?? null,
        actor: e.actor ?? null,
        via: e.via ?? null,
        action: e.event ?? e.route,
        route: e.route,
        actor_type: actorType,
        token_id: actorType === 'token' ? (e.tokenId ?? null) : null,
        summary: sentence(e),
        target: e.target ?? null,
        ip: e.ip ?? null,
        outcome: e.outcome,
        detail: e.detail ? JSON.stringify(e.detail) : null,
        target_kind: e.state?.kind ?? null,
        target_id: e.state?.id ?? null,
        state_before: e.state ? JSON.stringify(e.state.before) : null,
        state_after: e.state ? JSON.stringify(e.state.after) : null,
        has_state: e.state ? 1 : null,
        revert_of: e.revertOf ?? null,
        app_id: e.appId !== undefined ? e.appId : APP_ACTION.test(e.route) ? (e.target ?? null) : null,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    if (e.revertOf != null)
      await tx.updateTable('audit').set({ reverted_by: r.id }).where('id', '=', e.revertOf).execute();
    return r.id;
  });
}

/** One entry as docs/api.md "Audit diff and revert" names it, with a few extra facts after. */
export interface AuditEntry {
  id: string;
  at: string;
  /** user: a session; token: an API token (id and name are the token's); system: no operator. */
  actor: { type: ActorType; id: string | null; name: string | null; owner_id?: string | null };
  /** `<METHOD> <route pattern>`. */
  action: string;
  target: { type: string; id: string | null };
  /** The target's current name, when it has one and still exists. */
  target_name: string | null;
  ip: string | null;
  outcome: AuditOutcome;
  summary: string;
  revertible: boolean;
  reverted_at: string | null;
  /** The finer event name (`auth.totp_failed`), null when the route says it all. */
  event: string | null;
  /** The HTTP status of the answer. */
  status: number;
  /** The operator behind the actor (a token's owner), null for system entries. */
  user: { id: string; username: string } | null;
  /** How the actor authenticated (`session`, `token`, `password`, `totp`, `setup`, `webhook`). */
  via: string | null;
  detail: Record<string, unknown> | null;
  /** The kind of state recorded (app_env, domain...): null when the entry is not diffable. */
  state_kind: string | null;
  reverted_by: string | null;
  revert_of: string | null;
  app_id: string | null;
}

export interface AuditFilter {
  cursor?: number;
  limit: number;
  /** The actor's name or id; an operator's username also finds what their tokens did. */
  actor?: string;
  /** A prefix of the action (`PUT /api/apps/{id}/env`, `DELETE `), of its path (`/api/apps/`), or of the event (`auth.`). */
  action?: string;
  /** The target's id. */
  target?: string;
  since?: string;
  until?: string;
  /** Only entries about these apps, or about none (a caller limited to some apps); null: all. */
  apps?: ReadonlySet<string> | null;
}

type Row = Awaited<ReturnType<typeof selectRows>>[number];
const selectRows = (db: Db) => db.selectFrom('audit').selectAll().execute();
type ListedRow = Row & { token_name: string | null };

export const isOk = (outcome: number) => outcome >= 200 && outcome < 300;

/** Which kind of thing a route acts on, by its path; the longest prefix wins. */
const TARGET_TYPES: Array<[string, string]> = [
  ['/api/auth/api-tokens', 'api_token'],
  ['/api/auth/sessions', 'session'],
  ['/api/auth/', 'user'],
  ['/api/setup/', 'user'],
  ['/api/operators/invitations', 'invitation'],
  ['/api/operators', 'user'],
  ['/api/invitations/', 'user'],
  ['/api/settings/notifications', 'notification_channel'],
  ['/api/apps/{id}/jobs/{jid}', 'job'],
  ['/api/alerts', 'alert_rule'],
  ['/api/log-drains', 'log_drain'],
  ['/api/apps', 'app'],
  ['/webhooks/', 'app'],
  ['/api/domains', 'domain'],
  ['/api/instance/', 'instance'],
  ['/api/audit', 'audit_entry'],
];

/** A revert acts on the recorded target: its type follows the kind of state. */
const STATE_TARGET_TYPES: Record<string, string> = {
  app_env: 'app',
  app: 'app',
  service: 'service',
  triggers: 'app',
  domain: 'domain',
  base_domain: 'instance',
  deploy_concurrency: 'instance',
  notification_channel: 'notification_channel',
  job: 'job',
  alert_rule: 'alert_rule',
  log_drain: 'log_drain',
};

export function targetTypeOf(route: string, stateKind: string | null): string {
  const path = route.slice(route.indexOf(' ') + 1);
  const found = TARGET_TYPES.find(([prefix]) => path.startsWith(prefix))?.[1];
  if (found === 'audit_entry' && stateKind && STATE_TARGET_TYPES[stateKind])
    return STATE_TARGET_TYPES[stateKind]!;
  if (found) return found;
  const segment = path.split('/').filter(Boolean)[path.startsWith('/api/') ? 1 : 0] ?? 'instance';
  return segment.replace(/-/g, '_').replace(/s$/, '');
}

/** Older rows named a target by the path parameters as JSON. */
function targetId(r: Row, type: string): string | null {
  if (type === 'instance') return null;
  const t = r.target;
  if (t !== null && t.startsWith('{')) {
    try {
      const params = JSON.parse(t) as Record<string, string>;
      return params.id ?? Object.values(params)[0] ?? null;
    } catch {
      return t;
    }
  }
  if (t === null && type === 'user') return r.actor_id;
  return t;
}

const ROUTE_LIKE = /^[A-Z]+ \//;

/** Rows from before the route was recorded, with an event no route table names, read as `SYSTEM <event>`. */
function actionOf(r: Row): string {
  if (r.route !== null) return r.route;
  const space = r.action.indexOf(' ');
  return ROUTE_LIKE.test(r.action)
    ? routeAction(r.action.slice(0, space), r.action.slice(space + 1))
    : `SYSTEM ${r.action}`;
}

function entry(r: ListedRow, names: Map<string, string>): AuditEntry {
  const diffable = r.has_state === 1 && isStateKind(r.target_kind) && isOk(r.outcome);
  const action = actionOf(r);
  const type = targetTypeOf(action, r.target_kind);
  const id = targetId(r, type);
  const actorType: ActorType =
    r.actor_type ?? (r.via === 'token' ? 'token' : r.actor_id !== null ? 'user' : 'system');
  const detail = r.detail ? (JSON.parse(r.detail) as Record<string, unknown>) : null;
  const claimed = typeof detail?.username === 'string' ? detail.username : null;
  const actor =
    actorType === 'token'
      ? { type: actorType, id: r.token_id, name: r.token_name, owner_id: r.actor_id }
      : {
          type: actorType,
          id: actorType === 'user' ? r.actor_id : null,
          name: r.actor ?? (actorType === 'user' ? claimed : 'system'),
        };
  const base = r.summary ?? r.action;
  const name = id === null ? undefined : names.get(`${type}:${id}`);
  return {
    id: String(r.id),
    at: r.at,
    actor,
    action,
    target: { type, id },
    target_name: name ?? null,
    ip: r.ip,
    outcome: r.outcome >= 100 && r.outcome < 400 ? 'ok' : 'error',
    summary: name ? `${base}: ${name}` : base,
    revertible: diffable && r.reverted_at === null,
    reverted_at: r.reverted_at,
    event: ROUTE_LIKE.test(r.action) ? null : r.action,
    status: r.outcome,
    user: r.actor_id !== null && r.actor !== null ? { id: r.actor_id, username: r.actor } : null,
    via: r.via,
    detail,
    state_kind: diffable ? r.target_kind : null,
    reverted_by: r.reverted_by === null ? null : String(r.reverted_by),
    revert_of: r.revert_of === null ? null : String(r.revert_of),
    app_id: r.app_id,
  };
}

/** The current names of the page's targets (apps, domains, channels, tokens), one query per kind. */
async function targetNames(db: Db, rows: ListedRow[]): Promise<Map<string, string>> {
  const ids = new Map<string, Set<string>>();
  for (const r of rows) {
    const type = targetTypeOf(actionOf(r), r.target_kind);
    const id = targetId(r, type);
    if (id !== null) (ids.get(type) ?? ids.set(type, new Set()).get(type)!).add(id);
  }
  const names = new Map<string, string>();
  const add = (type: string, list: Array<{ id: string; name: string }>) =>
    list.forEach((x) => names.set(`${type}:${x.id}`, x.name));
  const of = (type: string) => [...(ids.get(type) ?? [])];
  if (of('app').length)
    add('app', await db.selectFrom('apps').select(['id', 'name']).where('id', 'in', of('app')).execute());
  if (of('domain').length)
    add(
      'domain',
      await db
        .selectFrom('domains')
        .select(['id', 'hostname as name'])
        .where('id', 'in', of('domain'))
        .execute(),
    );
  if (of('notification_channel').length)
    add(
      'notification_channel',
      await db
        .selectFrom('notification_channels')
        .select(['id', 'name'])
        .where('id', 'in', of('notification_channel'))
        .execute(),
    );
  if (of('alert_rule').length)
    add(
      'alert_rule',
      await db.selectFrom('alert_rules').select(['id', 'name']).where('id', 'in', of('alert_rule')).execute(),
    );
  if (of('log_drain').length)
    add(
      'log_drain',
      await db.selectFrom('log_drains').select(['id', 'name']).where('id', 'in', of('log_drain')).execute(),
    );
  if (of('api_token').length)
    add(
      'api_token',
      await db.selectFrom('api_tokens').select(['id', 'name']).where('id', 'in', of('api_token')).execute(),
    );
  return names;
}

const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => '\\' + c);

export async function listAudit(
  db: Db,
  opts: AuditFilter,
): Promise<{ items: AuditEntry[]; next_cursor?: string }> {
  let q = db
    .selectFrom('audit')
    .leftJoin('api_tokens', 'api_tokens.id', 'audit.token_id')
    .selectAll('audit')
    .select('api_tokens.name as token_name')
    .orderBy('audit.id', 'desc')
    .limit(opts.limit + 1);
  if (opts.cursor !== undefined) q = q.where('audit.id', '<', opts.cursor);
  if (opts.actor) {
    const a = opts.actor;
    q = q.where((eb) =>
      eb.or([
        eb('audit.actor', '=', a),
        eb('audit.actor_id', '=', a),
        eb('audit.token_id', '=', a),
        eb.and([eb('audit.token_id', 'is not', null), eb('api_tokens.name', '=', a)]),
      ]),
    );
  }
  if (opts.action) {
    const prefix = escapeLike(opts.action) + '%';
    // SQLite's like ignores ASCII case; PostgreSQL's ilike is the same match there.
    const like = dialectOf(db) === 'postgres' ? 'ilike' : 'like';
    q = q.where((eb) =>
      eb.or([
        eb(sql<string>`audit.route`, like, sql<string>`${prefix} escape '\\'`),
        eb(sql<string>`audit.action`, like, sql<string>`${prefix} escape '\\'`),
        eb(sql<string>`audit.route`, like, sql<string>`${'% ' + prefix} escape '\\'`),
      ]),
    );
  }
  if (opts.target) {
    const t = opts.target;
    q = q.where((eb) => eb.or([eb('audit.target', '=', t), eb('audit.target_id', '=', t)]));
  }
  if (opts.apps) {
    const apps = [...opts.apps];
    q = q.where((eb) =>
      apps.length
        ? eb.or([eb('audit.app_id', 'is', null), eb('audit.app_id', 'in', apps)])
        : eb('audit.app_id', 'is', null),
    );
    // An entry whose target is another app (one that did not learn its app when written) is as absent.
    // A preview's own app row is not another app: its entries belong to its app.
    const others = apps.length
      ? sql`select id from apps where id not in (${sql.join(apps)}) and (parent_app_id is null or parent_app_id not in (${sql.join(apps)}))`
      : sql`select id from apps`;
    q = q.where(
      sql<boolean>`(audit.target is null or audit.target not in (${others})) and (audit.target_id is null or audit.target_id not in (${others}))`,
    );
  }
  if (opts.since) q = q.where('audit.at', '>=', opts.since);
  if (opts.until) q = q.where('audit.at', '<=', opts.until);
  const rows = (await q.execute()) as ListedRow[];
  const page = rows.slice(0, opts.limit);
  const names = await targetNames(db, page);
  const items = page.map((r) => entry(r, names));
  if (opts.apps)
    for (const e of items) e.detail = withoutOtherApps(e.detail, opts.apps) as AuditEntry['detail'];
  const out: { items: AuditEntry[]; next_cursor?: string } = { items };
  if (rows.length > opts.limit && page.length) out.next_cursor = String(page[page.length - 1]!.id);
  return out;
}

/** Fields that point inside the app an object's `app_id` names (a domain's service and port). */
const WITHIN_APP: ReadonlySet<string> = new Set(['app_id', 'service', 'port']);

/**
 * What a reader limited to `apps` may see of an entry's detail or recorded state: app ids outside
 * the list are left out of `app_ids` lists, and an object whose `app_id` is another app (an
 * operator invited to it, a domain moved to it) loses that id and where it pointed inside that
 * app, so neither the listing nor the diff reveals that app.
 */
export function withoutOtherApps(v: unknown, apps: ReadonlySet<string>): unknown {
  if (Array.isArray(v)) return v.map((x) => withoutOtherApps(x, apps));
  if (v === null || typeof v !== 'object') return v;
  const app = (v as { app_id?: unknown }).app_id;
  const other = typeof app === 'string' && !apps.has(app);
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) {
    if (k === 'app_ids' && Array.isArray(x)) out[k] = x.filter((a) => typeof a !== 'string' || apps.has(a));
    else if (other && WITHIN_APP.has(k)) continue;
    else out[k] = withoutOtherApps(x, apps);
  }
  return out;
}

export async function getAuditRow(db: Db, id: number): Promise<Row | null> {
  return (await db.selectFrom('audit').selectAll().where('id', '=', id).executeTakeFirst()) ?? null;
}
