import type { Kysely, Migration } from 'kysely';
import { dialectOf, sql } from '../kysely.js';

// Observing and alerting (docs/alerts.md, docs/log-drains.md):
// - resource_series: CPU, memory and restarts per (app, service) in one-minute rows, written
//   additively like host_vitals (lib/series/store.ts keeps them 30 days);
// - alert_rules with their state, and alert_events: the history, and the outbox of the one
//   notification each transition sends (a row is `pending` until it went out), so a restart of
//   the control plane neither loses nor repeats one;
// - log_drains, their URL and headers sealed (bound to the drain id);
// - notification channels of the new kinds keep their non-secret options (an email's
//   recipients) and a webhook's signing secret, sealed.
// The default rules a new instance starts with are the last step.
export const migration: Migration = {
  async up(db: Kysely<any>) {
    await resourceSeries(db);
    await alerts(db);
    await drains(db);
    await db.schema.alterTable('notification_channels').addColumn('options', 'text').execute();
    await db.schema.alterTable('notification_channels').addColumn('secret_sealed', 'text').execute();
    await defaultRules(db);
  },
};

async function resourceSeries(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('resource_series')
    .addColumn('res', 'integer', (c) => c.notNull())
    .addColumn('app_id', 'text', (c) => c.notNull())
    .addColumn('service', 'text', (c) => c.notNull())
    .addColumn('t', 'integer', (c) => c.notNull())
    .addColumn('samples', 'integer', (c) => c.notNull())
    .addColumn('cpu_sum', 'real', (c) => c.notNull())
    .addColumn('mem_sum', 'real', (c) => c.notNull())
    .addColumn('mem_limit', 'integer', (c) => c.notNull())
    .addColumn('restarts', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('resource_series_pk', ['res', 'app_id', 'service', 't'])
    .$call((b) => (dialectOf(db) === 'sqlite' ? b.modifyEnd(sql`without rowid`) : b))
    .execute();
  await db.schema.createIndex('resource_series_age').on('resource_series').columns(['res', 't']).execute();
}

async function alerts(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('alert_rules')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('app_id', 'text', (c) => c.references('apps.id').onDelete('cascade'))
    .addColumn('metric', 'text', (c) => c.notNull())
    .addColumn('op', 'text', (c) => c.notNull())
    .addColumn('threshold', 'real', (c) => c.notNull())
    .addColumn('for_s', 'integer', (c) => c.notNull())
    .addColumn('channels', 'text', (c) => c.notNull())
    .addColumn('enabled', 'integer', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('since', 'text')
    .addColumn('pending_since', 'text')
    .addColumn('last_value', 'real')
    .addColumn('evaluated_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('alert_events')
    .addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
    .addColumn('rule_id', 'text', (c) => c.references('alert_rules.id').onDelete('set null'))
    .addColumn('rule_name', 'text', (c) => c.notNull())
    .addColumn('app_id', 'text')
    .addColumn('metric', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('value', 'real')
    .addColumn('threshold', 'real', (c) => c.notNull())
    .addColumn('detail', 'text')
    .addColumn('at', 'text', (c) => c.notNull())
    .addColumn('notify_state', 'text', (c) => c.notNull())
    .addColumn('notified_at', 'text')
    .execute();
  await db.schema.createIndex('alert_events_rule').on('alert_events').columns(['rule_id', 'id']).execute();
  await db.schema
    .createIndex('alert_events_pending')
    .on('alert_events')
    .columns(['notify_state', 'id'])
    .execute();
}

async function drains(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('log_drains')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('url_sealed', 'text', (c) => c.notNull())
    .addColumn('url_hint', 'text', (c) => c.notNull())
    .addColumn('app_ids', 'text')
    .addColumn('headers_sealed', 'text')
    .addColumn('header_names', 'text', (c) => c.notNull())
    .addColumn('enabled', 'integer', (c) => c.notNull())
    .addColumn('last_delivery', 'text')
    .addColumn('delivered', 'integer', (c) => c.notNull())
    .addColumn('dropped', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
}

/** The disk, certificate and backup rules a new instance starts with. */
async function defaultRules(db: Kysely<any>): Promise<void> {
  const now = new Date().toISOString();
  const rule = (id: string, name: string, metric: string, op: string, threshold: number, forS: number) => ({
    id,
    name,
    app_id: null,
    metric,
    op,
    threshold,
    for_s: forS,
    channels: '[]',
    enabled: 1,
    state: 'ok',
    since: now,
    pending_since: null,
    last_value: null,
    evaluated_at: null,
    created_at: now,
    updated_at: now,
  });
  await db
    .insertInto('alert_rules')
    .values([
      rule('default-disk', 'Disk over 90%', 'disk_percent', '>', 90, 300),
      rule('default-certificate', 'Certificate expires within 14 days', 'certificate_days_left', '<', 14, 0),
      rule('default-backup', 'Backup older than twice its schedule', 'backup_age_schedules', '>', 2, 0),
    ])
    .execute();
}
