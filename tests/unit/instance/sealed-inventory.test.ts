// The one inventory of sealed columns (lib/instance/sealed-rows.ts) against the migrated schema:
// a column that holds sealed values and is missing from it would be skipped by
// `svc rotate-master-key` (left under the old key, unreadable after) and by the boot-time key check.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { openDb, migrate, rawConnection } from '#lib/db/index.js';
import { createSealer } from '#lib/crypto/seal.js';
import { certificateKeyBinding, s3Binding } from '#lib/crypto/bindings.js';
import { SEALED_COLUMNS, hasSealedData, unopenableSealedData } from '#lib/instance/sealed-rows.js';

/** Columns that hold sealed values by the schema's naming: `*sealed*`, and the TOTP secrets. */
const SEALED_NAME = /sealed|^totp_secret$|^totp_pending$/;

test('every column of the schema that holds sealed values is in the inventory', async () => {
  const db = openDb(':memory:');
  try {
    await migrate(db);
    const raw = rawConnection(db);
    const tables = (
      raw
        .prepare(
          "select name from sqlite_master where type = 'table' and name not like 'sqlite_%' and name not like 'kysely_%'",
        )
        .all() as Array<{ name: string }>
    ).map((t) => t.name);
    const found: string[] = [];
    for (const t of tables) {
      for (const c of raw.prepare(`pragma table_info(${t})`).all() as Array<{ name: string }>)
        if (SEALED_NAME.test(c.name)) found.push(`${t}.${c.name}`);
    }
    const listed = new Set(SEALED_COLUMNS.map((c) => `${c.table}.${c.column}`));
    assert.deepEqual(
      found.filter((f) => !listed.has(f)),
      [],
    );
    assert.ok(found.length >= 10, found.join(' '));
  } finally {
    await db.destroy();
  }
});

test('the boot-time key check sees every kind: a certificate key or a backup secret alone is enough', async () => {
  const db = openDb(':memory:');
  try {
    await migrate(db);
    const right = createSealer(randomBytes(32));
    const wrong = createSealer(randomBytes(32));
    assert.equal(await hasSealedData(db), false);
    const at = new Date().toISOString();
    await db
      .insertInto('domains')
      .values({
        id: 'dcert',
        hostname: 'c.example.com',
        app_id: null,
        service: null,
        port: null,
        redirect_to: 'https://example.org',
        created_at: at,
        updated_at: at,
      })
      .execute();
    await db
      .insertInto('domain_certificates')
      .values({
        domain_id: 'dcert',
        cert_pem: 'x',
        key_sealed: right.seal('pem', certificateKeyBinding('dcert')),
        issuer: 'x',
        not_after: at,
        fingerprint256: 'x',
        created_at: at,
      })
      .execute();
    assert.equal(await hasSealedData(db), true);
    assert.deepEqual(await unopenableSealedData(db, right), []);
    assert.deepEqual(await unopenableSealedData(db, wrong), ['certificate keys']);
    // Same binding for app and instance backup destinations: both are listed.
    assert.ok(
      SEALED_COLUMNS.some((c) => c.table === 'instance_backup' && c.binding({ id: 'i' }) === s3Binding('i')),
    );
  } finally {
    await db.destroy();
  }
});
