import type { Kysely, Migration } from 'kysely';
import { dialectOf, sql } from '../kysely.js';

// The edge: domains and their uploaded certificates, what the checker last saw of each host (DNS,
// served certificate), the upstream addresses the proxy routes to, and the request and host
// time series. Series rows are keyed by (resolution, series, bucket start) and written additively
// at 10 s, 1 min and 1 h at once, so a roll-up is exact and retention is a plain delete by age.
export const migration: Migration = {
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
      .$call((b) => (dialectOf(db) === 'sqlite' ? b.modifyEnd(sql`without rowid`) : b))
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
      .$call((b) => (dialectOf(db) === 'sqlite' ? b.modifyEnd(sql`without rowid`) : b))
      .execute();
  },
};
