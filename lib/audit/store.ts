// Every query of the audit log: writing an entry, one page of a filtered listing, the current
// names of the targets a page shows, and one entry by id. index.ts says what entries mean.
import type { Insertable, Selectable } from 'kysely';
import { dialectOf, sql } from '../db/kysely.js';
import type { Db } from '../db/index.js';
import type { AuditTable } from '../db/schema.js';

export type AuditRow = Selectable<AuditTable>;
/** A row of a listing: the entry with the name of the token that acted, when one did. */
export type ListedRow = AuditRow & { token_name: string | null };

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

/** Writes one entry (and links a revert to its original in the same transaction); answers its id. */
export async function insertAuditRow(db: Db, row: Insertable<AuditTable>): Promise<number> {
  return db.transaction().execute(async (tx) => {
    const r = await tx.insertInto('audit').values(row).returning('id').executeTakeFirstOrThrow();
    if (row.revert_of != null)
      await tx.updateTable('audit').set({ reverted_by: r.id }).where('id', '=', row.revert_of).execute();
    return r.id;
  });
}

const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => '\\' + c);

/** Newest first, at most `limit + 1` rows (one more says whether a next page exists). */
export async function auditRows(db: Db, opts: AuditFilter): Promise<ListedRow[]> {
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
  return (await q.execute()) as ListedRow[];
}

/** The target types whose current name a listing shows, each with its table and name column. */
const NAMED = {
  app: ['apps', 'name'],
  domain: ['domains', 'hostname'],
  notification_channel: ['notification_channels', 'name'],
  alert_rule: ['alert_rules', 'name'],
  log_drain: ['log_drains', 'name'],
  api_token: ['api_tokens', 'name'],
} as const;
export type NamedTarget = keyof typeof NAMED;
export const NAMED_TARGETS = Object.keys(NAMED) as NamedTarget[];

/** The current names of these targets of one type (the ones still there). */
export function targetNameRows(
  db: Db,
  type: NamedTarget,
  ids: string[],
): Promise<Array<{ id: string; name: string }>> {
  const [table, column] = NAMED[type];
  // The tables differ; each has an `id` and a text name column. Kysely cannot type a union of tables.
  return db
    .selectFrom(table as 'apps')
    .select(['id', `${column as 'name'} as name`])
    .where('id', 'in', ids)
    .execute();
}

export async function getAuditRow(db: Db, id: number): Promise<AuditRow | null> {
  return (await db.selectFrom('audit').selectAll().where('id', '=', id).executeTakeFirst()) ?? null;
}

/** Marks the entry reverted at `at`; false when it was already (a revert claims it once). */
export async function claimRevert(db: Db, id: number, at: string): Promise<boolean> {
  const claimed = await db
    .updateTable('audit')
    .set({ reverted_at: at })
    .where('id', '=', id)
    .where('reverted_at', 'is', null)
    .executeTakeFirst();
  return Number(claimed.numUpdatedRows) > 0;
}

/** A revert that failed gives its claim back. */
export async function releaseRevert(db: Db, id: number): Promise<void> {
  await db.updateTable('audit').set({ reverted_at: null }).where('id', '=', id).execute();
}
