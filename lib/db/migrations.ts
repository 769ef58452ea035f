// Migrations are frozen in time and listed statically: never edit one that has shipped, add the next.
import type { Kysely, Migration } from 'kysely';
import { sql } from './kysely.js';
import { addEncoded, encode, newHistogram } from '../util/histogram.js';

const m0001: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('users')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('username', 'text', (c) => c.notNull().unique())
      .addColumn('password_hash', 'text', (c) => c.notNull())
      .addColumn('totp_enabled', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('totp_secret', 'text')
      .addColumn('totp_pending', 'text')
      .addColumn('totp_last_step', 'integer')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('sessions')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('token_hash', 'text', (c) => c.notNull().unique())
      .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('last_seen_at', 'text', (c) => c.notNull())
      .addColumn('expires_at', 'text', (c) => c.notNull())
      .addColumn('ip', 'text')
      .addColumn('user_agent', 'text')
      .addColumn('step_up_until', 'text')
      .execute();
    await db.schema.createIndex('sessions_user').on('sessions').column('user_id').execute();
    await db.schema
      .createTable('api_tokens')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('token_hash', 'text', (c) => c.notNull().unique())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('expires_at', 'text')
      .addColumn('last_used_at', 'text')
      .addColumn('revoked_at', 'text')
      .addColumn('step_up_until', 'text')
      .execute();
    await db.schema
      .createTable('recovery_codes')
      .addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
      .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('code_hash', 'text', (c) => c.notNull())
      .addColumn('used_at', 'text')
      .execute();
    await db.schema.createIndex('recovery_codes_user').on('recovery_codes').column('user_id').execute();
    await db.schema
      .createTable('audit')
      .addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
      .addColumn('at', 'text', (c) => c.notNull())
      .addColumn('actor_id', 'text')
      .addColumn('actor', 'text')
      .addColumn('via', 'text')
      .addColumn('action', 'text', (c) => c.notNull())
      .addColumn('target', 'text')
      .addColumn('ip', 'text')
      .addColumn('outcome', 'integer', (c) => c.notNull())
      .addColumn('detail', 'text')
      .execute();
    await db.schema
      .createTable('settings')
      .addColumn('key', 'text', (c) => c.primaryKey())
      .addColumn('value', 'text', (c) => c.notNull())
      .execute();
    await sql`select 1`.execute(db);
  },
};

const ACTIVE_DEPLOYMENT = "status in ('queued','cloning','building','deploying','health_checking')";

const m0002: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('apps')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull().unique())
      .addColumn('source', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .addColumn('deleting_at', 'text')
      .execute();
    await db.schema
      .createTable('app_env')
      .addColumn('app_id', 'text', (c) => c.notNull().references('apps.id').onDelete('cascade'))
      .addColumn('key', 'text', (c) => c.notNull())
      .addColumn('secret', 'integer', (c) => c.notNull())
      .addColumn('sealed', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('app_env_pk', ['app_id', 'key'])
      .execute();
    await db.schema
      .createTable('app_services')
      .addColumn('app_id', 'text', (c) => c.notNull().references('apps.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('port', 'integer')
      .addColumn('health_path', 'text')
      .addPrimaryKeyConstraint('app_services_pk', ['app_id', 'name'])
      .execute();
    await db.schema
      .createTable('deployments')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('app_id', 'text', (c) => c.notNull().references('apps.id').onDelete('cascade'))
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('trigger', 'text', (c) => c.notNull())
      .addColumn('ref', 'text')
      .addColumn('commit_sha', 'text')
      .addColumn('commit_subject', 'text')
      .addColumn('images', 'text')
      .addColumn('error', 'text')
      .addColumn('rollback_of', 'text')
      .addColumn('delivery_id', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('started_at', 'text')
      .addColumn('finished_at', 'text')
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('deployments_app').on('deployments').columns(['app_id', 'created_at']).execute();
    // At most one non-terminal deployment per app, enforced by the database itself.
    await sql`create unique index deployments_one_active on deployments (app_id) where ${sql.raw(ACTIVE_DEPLOYMENT)}`.execute(db);
    await db.schema
      .createTable('deployment_events')
      .addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
      .addColumn('deployment_id', 'text', (c) => c.notNull().references('deployments.id').onDelete('cascade'))
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('deployment_events_dep').on('deployment_events').column('deployment_id').execute();
    await db.schema
      .createTable('deployment_logs')
      .addColumn('deployment_id', 'text', (c) => c.notNull().references('deployments.id').onDelete('cascade'))
      .addColumn('seq', 'integer', (c) => c.notNull())
      .addColumn('at', 'text', (c) => c.notNull())
      .addColumn('stream', 'text', (c) => c.notNull())
      .addColumn('line', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('deployment_logs_pk', ['deployment_id', 'seq'])
      .execute();
  },
};

// Pushes in quick succession coalesce: one deployment runs while at most one newer push waits
// behind it (`waiting` = 1). Everything else still holds to one non-terminal deployment per app,
// enforced by the index (a manual deploy or rollback while one is active is refused by it).
// `spec` records what was deployed (compose text, Dockerfile or image) so a rollback re-plans
// the same stack from the kept images without cloning.
const m0003: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .alterTable('deployments')
      .addColumn('waiting', 'integer', (c) => c.notNull().defaultTo(0))
      .execute();
    await db.schema.alterTable('deployments').addColumn('spec', 'text').execute();
    await db.schema.alterTable('deployments').addColumn('commit_wanted', 'text').execute();
    await sql`drop index deployments_one_active`.execute(db);
    await sql`create unique index deployments_one_active on deployments (app_id) where waiting = 0 and ${sql.raw(ACTIVE_DEPLOYMENT)}`.execute(db);
    await sql`create unique index deployments_one_waiting on deployments (app_id) where waiting = 1 and status = 'queued'`.execute(db);
    await db.schema.createIndex('deployments_status').on('deployments').columns(['status', 'created_at']).execute();
  },
};

const m0004: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('app_webhooks')
      .addColumn('app_id', 'text', (c) => c.primaryKey().references('apps.id').onDelete('cascade'))
      .addColumn('secret_sealed', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('app_triggers')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('app_id', 'text', (c) => c.notNull().references('apps.id').onDelete('cascade'))
      .addColumn('event', 'text', (c) => c.notNull())
      .addColumn('pattern', 'text', (c) => c.notNull())
      .addColumn('enabled', 'integer', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('app_triggers_app').on('app_triggers').column('app_id').execute();
    await db.schema
      .createTable('app_ssh_keys')
      .addColumn('app_id', 'text', (c) => c.primaryKey().references('apps.id').onDelete('cascade'))
      .addColumn('public_key', 'text', (c) => c.notNull())
      .addColumn('fingerprint', 'text', (c) => c.notNull())
      .addColumn('private_sealed', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
    // Delivery ids seen within the retention window: a forge's retry must not deploy twice.
    await db.schema
      .createTable('webhook_deliveries')
      .addColumn('app_id', 'text', (c) => c.notNull().references('apps.id').onDelete('cascade'))
      .addColumn('delivery_id', 'text', (c) => c.notNull())
      .addColumn('received_at', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('webhook_deliveries_pk', ['app_id', 'delivery_id'])
      .execute();
    await db.schema.createIndex('webhook_deliveries_at').on('webhook_deliveries').column('received_at').execute();
  },
};

// Pushes already received, by the ref update the forge signed (ref, old and new commit): a replay
// of a captured delivery is refused whatever its delivery id. Bounded per app (oldest dropped).
// Delivery ids get an (app, time) index for their per-app bound.
const m0005: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('webhook_pushes')
      .addColumn('app_id', 'text', (c) => c.notNull().references('apps.id').onDelete('cascade'))
      .addColumn('ref', 'text', (c) => c.notNull())
      .addColumn('old_sha', 'text', (c) => c.notNull())
      .addColumn('new_sha', 'text', (c) => c.notNull())
      .addColumn('received_at', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('webhook_pushes_pk', ['app_id', 'ref', 'old_sha', 'new_sha'])
      .execute();
    await db.schema.createIndex('webhook_pushes_app_at').on('webhook_pushes').columns(['app_id', 'received_at']).execute();
    await db.schema.createIndex('webhook_deliveries_app_at').on('webhook_deliveries').columns(['app_id', 'received_at']).execute();
  },
};

// The edge: domains and their uploaded certificates, what the checker last saw of each host (DNS,
// served certificate), the upstream addresses the proxy routes to, and the request and host
// time series. Series rows are keyed by (resolution, series, bucket start) and written additively
// at 10 s, 1 min and 1 h at once, so a roll-up is exact and retention is a plain delete by age.
const m0006: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('domains')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('hostname', 'text', (c) => c.notNull().unique())
      // A deleted app leaves its domains unassigned rather than free for anyone to take over.
      .addColumn('app_id', 'text', (c) => c.references('apps.id').onDelete('set null'))
      .addColumn('service', 'text')
      .addColumn('port', 'integer')
      .addColumn('redirect_to', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('domains_app').on('domains').column('app_id').execute();
    await db.schema
      .createTable('domain_certificates')
      .addColumn('domain_id', 'text', (c) => c.primaryKey().references('domains.id').onDelete('cascade'))
      .addColumn('cert_pem', 'text', (c) => c.notNull())
      .addColumn('key_sealed', 'text', (c) => c.notNull())
      .addColumn('issuer', 'text', (c) => c.notNull())
      .addColumn('not_after', 'text', (c) => c.notNull())
      .addColumn('fingerprint256', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('host_checks')
      .addColumn('hostname', 'text', (c) => c.primaryKey())
      .addColumn('dns_resolved', 'text')
      .addColumn('dns_expected', 'text')
      .addColumn('dns_points_here', 'integer')
      .addColumn('dns_error', 'text')
      .addColumn('dns_checked_at', 'text')
      .addColumn('cert_issuer', 'text')
      .addColumn('cert_not_after', 'text')
      .addColumn('cert_fingerprint256', 'text')
      .addColumn('cert_error', 'text')
      .addColumn('cert_checked_at', 'text')
      .addColumn('issuing_since', 'text')
      .addColumn('notified', 'text')
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('proxy_upstreams')
      .addColumn('app_id', 'text', (c) => c.notNull().references('apps.id').onDelete('cascade'))
      .addColumn('service', 'text', (c) => c.notNull())
      .addColumn('addresses', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('proxy_upstreams_pk', ['app_id', 'service'])
      .execute();
    await db.schema
      .createTable('request_series')
      .addColumn('res', 'integer', (c) => c.notNull())
      .addColumn('app_id', 'text', (c) => c.notNull())
      .addColumn('service', 'text', (c) => c.notNull())
      .addColumn('t', 'integer', (c) => c.notNull())
      .addColumn('requests', 'integer', (c) => c.notNull())
      .addColumn('errors_4xx', 'integer', (c) => c.notNull())
      .addColumn('errors_5xx', 'integer', (c) => c.notNull())
      .addColumn('bytes_out', 'integer', (c) => c.notNull())
      .addColumn('hist', 'blob', (c) => c.notNull())
      .addPrimaryKeyConstraint('request_series_pk', ['res', 'app_id', 'service', 't'])
      .modifyEnd(sql`without rowid`)
      .execute();
    await db.schema.createIndex('request_series_age').on('request_series').columns(['res', 't']).execute();
    await db.schema
      .createTable('host_vitals')
      .addColumn('res', 'integer', (c) => c.notNull())
      .addColumn('t', 'integer', (c) => c.notNull())
      .addColumn('samples', 'integer', (c) => c.notNull())
      .addColumn('cpu_sum', 'real', (c) => c.notNull())
      .addColumn('load1_sum', 'real', (c) => c.notNull())
      .addColumn('mem_used_sum', 'integer', (c) => c.notNull())
      .addColumn('mem_total_sum', 'integer', (c) => c.notNull())
      .addColumn('disk_used_sum', 'integer', (c) => c.notNull())
      .addColumn('disk_total_sum', 'integer', (c) => c.notNull())
      .addPrimaryKeyConstraint('host_vitals_pk', ['res', 't'])
      .modifyEnd(sql`without rowid`)
      .execute();
  },
};

// Managed databases and backups (issue 15). Passwords and S3 secret keys are sealed, bound to their row.
const m0008: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('app_databases')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('app_id', 'text', (c) => c.notNull().references('apps.id').onDelete('cascade'))
      .addColumn('engine', 'text', (c) => c.notNull())
      .addColumn('version', 'text', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('username', 'text', (c) => c.notNull())
      .addColumn('password_sealed', 'text', (c) => c.notNull())
      .addColumn('host', 'text', (c) => c.notNull())
      .addColumn('port', 'integer', (c) => c.notNull())
      .addColumn('env_var', 'text', (c) => c.notNull())
      .addColumn('container', 'text', (c) => c.notNull())
      .addColumn('volume', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('error', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('app_databases_app').on('app_databases').column('app_id').execute();
    await db.schema.createIndex('app_databases_env').on('app_databases').columns(['app_id', 'env_var']).unique().execute();
    await db.schema
      .createTable('backup_configs')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('app_id', 'text', (c) => c.notNull().references('apps.id').onDelete('cascade'))
      .addColumn('source', 'text', (c) => c.notNull())
      .addColumn('schedule', 'text', (c) => c.notNull())
      .addColumn('keep_last', 'integer', (c) => c.notNull())
      .addColumn('destination', 'text', (c) => c.notNull())
      .addColumn('secret_sealed', 'text')
      .addColumn('enabled', 'integer', (c) => c.notNull())
      .addColumn('verify_after_run', 'integer', (c) => c.notNull())
      .addColumn('last_scheduled_at', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('backup_configs_app').on('backup_configs').column('app_id').execute();
    await db.schema
      .createTable('backup_runs')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('backup_id', 'text', (c) => c.notNull().references('backup_configs.id').onDelete('cascade'))
      .addColumn('app_id', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('trigger', 'text', (c) => c.notNull())
      .addColumn('artifact', 'text')
      .addColumn('artifact_removed', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('size_bytes', 'integer')
      .addColumn('sha256', 'text')
      .addColumn('error', 'text')
      .addColumn('verified_at', 'text')
      .addColumn('verify_error', 'text')
      .addColumn('started_at', 'text', (c) => c.notNull())
      .addColumn('finished_at', 'text')
      .execute();
    await db.schema.createIndex('backup_runs_backup').on('backup_runs').columns(['backup_id', 'started_at']).execute();
    await db.schema
      .createTable('backup_restores')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('run_id', 'text', (c) => c.notNull().references('backup_runs.id').onDelete('cascade'))
      .addColumn('app_id', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('error', 'text')
      .addColumn('started_at', 'text', (c) => c.notNull())
      .addColumn('finished_at', 'text')
      .execute();
  },
};

// Notification channels (URL sealed, bound to the channel id) and their last deliveries.
const m0007: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('notification_channels')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('url_sealed', 'text', (c) => c.notNull())
      .addColumn('url_hint', 'text', (c) => c.notNull())
      .addColumn('events', 'text', (c) => c.notNull())
      .addColumn('enabled', 'integer', (c) => c.notNull())
      .addColumn('last_delivery', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('notification_deliveries')
      .addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
      .addColumn('channel_id', 'text', (c) => c.notNull().references('notification_channels.id').onDelete('cascade'))
      .addColumn('at', 'text', (c) => c.notNull())
      .addColumn('event', 'text', (c) => c.notNull())
      .addColumn('ok', 'integer', (c) => c.notNull())
      .addColumn('status', 'integer')
      .addColumn('error', 'text')
      .addColumn('attempts', 'integer', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('notification_deliveries_channel').on('notification_deliveries').columns(['channel_id', 'id']).execute();
  },
};

// The request and vitals rows at the 24 h and 30 d ranges' own steps (5 min, 2 h; see
// lib/series/store.ts), built from the 1 min and 1 h rows already kept, so history written
// before them still shows in those ranges. Histograms add bucket by bucket, as at write time.
const m0009: Migration = {
  async up(db: Kysely<any>) {
    const now = Math.floor(Date.now() / 1000);
    for (const [res, from, keep] of [
      [300, 60, 86_400],
      [7200, 3600, 30 * 86_400],
    ] as const) {
      const rows = await db
        .selectFrom('request_series')
        .selectAll()
        .where('res', '=', from)
        .where('t', '>=', now - keep)
        .execute();
      const merged = new Map<string, { app_id: string; service: string; t: number; requests: number; errors_4xx: number; errors_5xx: number; bytes_out: number; hist: Uint32Array }>();
      for (const r of rows) {
        const t = Math.floor(r.t / res) * res;
        const key = `${r.app_id}\u0000${r.service}\u0000${t}`;
        let m = merged.get(key);
        if (!m) merged.set(key, (m = { app_id: r.app_id, service: r.service, t, requests: 0, errors_4xx: 0, errors_5xx: 0, bytes_out: 0, hist: newHistogram() }));
        m.requests += r.requests;
        m.errors_4xx += r.errors_4xx;
        m.errors_5xx += r.errors_5xx;
        m.bytes_out += r.bytes_out;
        addEncoded(m.hist, r.hist);
      }
      const values = [...merged.values()].map((m) => ({ ...m, res, hist: encode(m.hist) }));
      for (let i = 0; i < values.length; i += 500)
        await db
          .insertInto('request_series')
          .values(values.slice(i, i + 500))
          .onConflict((c) => c.doNothing())
          .execute();
      await sql`insert or ignore into host_vitals (res, t, samples, cpu_sum, load1_sum, mem_used_sum, mem_total_sum, disk_used_sum, disk_total_sum)
        select ${res}, (t / ${res}) * ${res}, sum(samples), sum(cpu_sum), sum(load1_sum), sum(mem_used_sum), sum(mem_total_sum), sum(disk_used_sum), sum(disk_total_sum)
        from host_vitals where res = ${from} and t >= ${now - keep} group by (t / ${res})`.execute(db);
    }
  },
};

// Audit diff and revert: what the audited change's target looked like before and after (a flat
// JSON state, secrets as sealed envelopes with a keyed digest), and whether it was reverted.
const m0010: Migration = {
  async up(db: Kysely<any>) {
    for (const [name, type] of [
      ['target_kind', 'text'],
      ['target_id', 'text'],
      ['state_before', 'text'],
      ['state_after', 'text'],
      ['has_state', 'integer'],
      ['reverted_at', 'text'],
      ['reverted_by', 'integer'],
      ['revert_of', 'integer'],
    ] as const) {
      await db.schema.alterTable('audit').addColumn(name, type).execute();
    }
    await db.schema.createIndex('audit_target').on('audit').columns(['target_kind', 'target_id', 'id']).execute();
  },
};

// Audit entries in the contract's shape (README "Audit diff and revert"): the route that
// caused the entry (`<METHOD> <pattern>`), who acted (user, token or system; the token's id), and a
// short sentence. Existing rows get the route their event name was written by at this version.
const LEGACY_ROUTES: Record<string, string> = {
  'app.created': 'POST /api/apps',
  'app.imported': 'POST /api/apps/import',
  'app.deleted': 'DELETE /api/apps/{id}',
  'app.updated': 'PATCH /api/apps/{id}',
  'app.env_replaced': 'PUT /api/apps/{id}/env',
  'app.env_revealed': 'GET /api/apps/{id}/env/{key}/reveal',
  'app.service_updated': 'PATCH /api/apps/{id}/services/{name}',
  'app.ssh_key_deleted': 'DELETE /api/apps/{id}/ssh-key',
  'app.ssh_key_regenerated': 'POST /api/apps/{id}/ssh-key/regenerate',
  'app.ssh_key_tested': 'POST /api/apps/{id}/ssh-key/test-connection',
  'app.trigger_added': 'POST /api/apps/{id}/triggers',
  'app.trigger_removed': 'DELETE /api/apps/{id}/triggers/{tid}',
  'app.webhook_removed': 'DELETE /api/apps/{id}/webhook',
  'app.webhook_secret_rotated': 'POST /api/apps/{id}/webhook/regenerate',
  'app.start': 'POST /api/apps/{id}/start',
  'app.stop': 'POST /api/apps/{id}/stop',
  'app.restart': 'POST /api/apps/{id}/restart',
  'app.shell_opened': 'GET /api/apps/{id}/services/{name}/shell',
  'app.shell_closed': 'GET /api/apps/{id}/services/{name}/shell',
  'backup.config_created': 'POST /api/apps/{id}/backups',
  'backup.config_updated': 'PATCH /api/apps/{id}/backups/{bid}',
  'backup.config_deleted': 'DELETE /api/apps/{id}/backups/{bid}',
  'backup.run_started': 'POST /api/apps/{id}/backups/{bid}/run',
  'backup.downloaded': 'GET /api/apps/{id}/backups/runs/{rid}/download',
  'backup.restore_started': 'POST /api/apps/{id}/backups/runs/{rid}/restore',
  'backup.restore_finished': 'POST /api/apps/{id}/backups/runs/{rid}/restore',
  'backup.verify_started': 'POST /api/apps/{id}/backups/runs/{rid}/verify',
  'database.created': 'POST /api/apps/{id}/databases',
  'database.deleted': 'DELETE /api/apps/{id}/databases/{dbid}',
  'deployment.created': 'POST /api/apps/{id}/deployments',
  'deployment.canceled': 'POST /api/apps/{id}/deployments/{did}/cancel',
  'deployment.rollback': 'POST /api/apps/{id}/deployments/{did}/rollback',
  'domain.created': 'POST /api/domains',
  'domain.updated': 'PATCH /api/domains/{id}',
  'domain.deleted': 'DELETE /api/domains/{id}',
  'domain.certificate_uploaded': 'POST /api/domains/{id}/certificate',
  'domain.certificate_removed': 'DELETE /api/domains/{id}/certificate',
  'audit.reverted': 'POST /api/audit/{id}/revert',
  'auth.api_token_created': 'POST /api/auth/api-tokens',
  'auth.api_token_revoked': 'DELETE /api/auth/api-tokens/{id}',
  'auth.login': 'POST /api/auth/login',
  'auth.login_failed': 'POST /api/auth/login',
  'auth.totp_failed': 'POST /api/auth/totp',
  'auth.logout': 'POST /api/auth/logout',
  'auth.session_revoked': 'DELETE /api/auth/sessions/{id}',
  'auth.step_up': 'POST /api/auth/step-up',
  'auth.totp_disabled': 'DELETE /api/auth/totp',
  'auth.totp_enabled': 'POST /api/auth/totp/enable',
  'auth.totp_setup': 'POST /api/auth/totp/setup',
  'instance.base_domain': 'PUT /api/instance/base-domain',
  'instance.deploy_concurrency': 'PUT /api/instance/deploy-concurrency',
  'instance.pruned': 'POST /api/instance/prune',
  'instance.reset': 'POST /api/instance/reset',
  'instance.restart': 'POST /api/instance/restart',
  'notification.channel_created': 'POST /api/settings/notifications',
  'notification.channel_updated': 'PATCH /api/settings/notifications/{id}',
  'notification.channel_deleted': 'DELETE /api/settings/notifications/{id}',
  'notification.channel_tested': 'POST /api/settings/notifications/{id}/test',
  'setup.admin_created': 'POST /api/setup/admin',
  'webhook.duplicate': 'POST /webhooks/{appID}',
  'webhook.deploy_queued': 'POST /webhooks/{appID}',
};

const m0011: Migration = {
  async up(db: Kysely<any>) {
    for (const name of ['route', 'actor_type', 'token_id', 'summary']) await db.schema.alterTable('audit').addColumn(name, 'text').execute();
    const rows = (await db.selectFrom('audit').select(['id', 'action', 'via', 'actor_id', 'actor', 'detail']).execute()) as Array<{
      id: number;
      action: string;
      via: string | null;
      actor_id: string | null;
      actor: string | null;
      detail: string | null;
    }>;
    for (const r of rows) {
      const asRoute = /^[A-Z]+ \//.test(r.action) ? r.action.replace(/:(\w+)\+?/g, '{$1}') : null;
      let route = asRoute ?? LEGACY_ROUTES[r.action] ?? null;
      const detail = r.detail ?? '';
      if (r.action === 'auth.login' && detail.includes('"second_factor":true')) route = 'POST /api/auth/totp';
      else if (/^app\.(start|stop|restart)$/.test(r.action) && detail.includes('"service":')) route = `POST /api/apps/{id}/services/{name}/${r.action.slice(4)}`;
      const actorType = r.via === 'token' ? 'token' : r.via === 'webhook' ? 'system' : r.actor_id !== null || r.actor !== null || r.via === 'password' || r.via === 'totp' ? 'user' : 'system';
      await db.updateTable('audit').set({ route, actor_type: actorType }).where('id', '=', r.id).execute();
    }
    await db.schema.createIndex('audit_route').on('audit').columns(['route', 'id']).execute();
  },
};

// What each delivery to /webhooks/{appID} came to (deployed, ignored and why, rejected...), so
// "why did my push not deploy?" has an answer. Never the payload nor the signature; the last 50
// per app (pruned on insert).
const m0012: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('webhook_delivery_log')
      .addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
      .addColumn('app_id', 'text', (c) => c.notNull().references('apps.id').onDelete('cascade'))
      .addColumn('at', 'text', (c) => c.notNull())
      .addColumn('provider', 'text')
      .addColumn('event', 'text')
      .addColumn('delivery_id', 'text')
      .addColumn('ref', 'text')
      .addColumn('commit_sha', 'text')
      .addColumn('outcome', 'text', (c) => c.notNull())
      .addColumn('reason', 'text')
      .addColumn('deployment_id', 'text')
      .execute();
    await db.schema.createIndex('webhook_delivery_log_app').on('webhook_delivery_log').columns(['app_id', 'id']).execute();
  },
};

// The instance backup: its own tables rather than backup_configs with a nullable app, so that every
// app backup query keeps its non-null app_id and the cascade from apps stays as it is.
const m0013: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('instance_backup')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('schedule', 'text', (c) => c.notNull())
      .addColumn('keep_last', 'integer', (c) => c.notNull())
      .addColumn('destination', 'text', (c) => c.notNull())
      .addColumn('secret_sealed', 'text')
      .addColumn('enabled', 'integer', (c) => c.notNull())
      .addColumn('last_scheduled_at', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('instance_backup_runs')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('trigger', 'text', (c) => c.notNull())
      .addColumn('artifact', 'text')
      .addColumn('artifact_removed', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('size_bytes', 'integer')
      .addColumn('sha256', 'text')
      .addColumn('error', 'text')
      .addColumn('notes', 'text')
      .addColumn('verified_at', 'text')
      .addColumn('verify_error', 'text')
      .addColumn('started_at', 'text', (c) => c.notNull())
      .addColumn('finished_at', 'text')
      .execute();
    await db.schema.createIndex('instance_backup_runs_started').on('instance_backup_runs').column('started_at').execute();
  },
};

// A deployment of one commit (`POST .../deployments {commit}`, disaster recovery) keeps the commit
// asked for until the pipeline resolves it: a deployment queued across a restart still deploys it.
const m0014: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.alterTable('deployments').addColumn('commit_pin', 'text').execute();
  },
};

export const migrations: Record<string, Migration> = {
  '0001_foundation': m0001,
  '0002_apps_deployments': m0002,
  '0003_deploy_queue': m0003,
  '0004_webhooks_keys': m0004,
  '0005_webhook_pushes': m0005,
  '0006_edge': m0006,
  '0007_notifications': m0007,
  '0008_data': m0008,
  '0009_series_steps': m0009,
  '0010_audit_state': m0010,
  '0011_audit_contract': m0011,
  '0012_webhook_delivery_log': m0012,
  '0013_instance_backup': m0013,
  '0014_deployment_commit_pin': m0014,
};
