// A preview's own databases (`database: "empty"` or `"latest_backup"`), made by its deployment as
// its first step (lib/deploy/runner.ts), not by the request that queued it: provisioning and a
// restore take from seconds to minutes, and a forge gives its delivery 10 s. Nothing of the
// deployment starts before they are ready (its env names them). Either every database the preview
// lacks is made (and loaded), or the deployment fails with the reason and what this step made is
// removed, so the next deployment starts over.
import type { Services } from '../http/handler.js';
import type { App } from '../apps/model.js';
import type { AppDatabaseTable } from '../db/schema.js';
import { getApp, previewOf } from '../apps/store.js';
import { createDatabase, deleteDatabase } from '../databases/index.js';
import { databaseRows, getDatabaseRow } from '../databases/store.js';
import { restoreDatabaseFromRun } from '../backups/restore.js';
import { keptRunsOfDatabase } from '../backups/store.js';
import { getSettings } from './store.js';

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

/**
 * For every managed database of the preview's app that the preview lacks: a new one of the same
 * engine and version under the same variable, on the preview's own app row (its network; gone with
 * it), made by the databases route's provisioning. With `latest_backup` each new one is loaded
 * with the latest successful backup run of the app's database it copies (none: it stays empty).
 * One of the preview's own that failed earlier is removed and made again. Throws a readable reason.
 */
export async function preparePreviewDatabases(
  env: Services,
  child: App,
  say: (line: string) => void,
  signal: AbortSignal,
): Promise<void> {
  const preview = await previewOf(env.db, child.id);
  if (!preview) return;
  const settings = await getSettings(env.db, preview.app_id);
  if (settings.database === 'none') return;
  const parent = await getApp(env.db, preview.app_id);
  const [theirs, mine] = await Promise.all([databaseRows(env.db, parent.id), databaseRows(env.db, child.id)]);
  const have = new Set<string>();
  for (const r of mine) {
    if (r.status === 'ready') {
      have.add(r.env_var);
      continue;
    }
    say(`preview database ${r.env_var}: the earlier one is not usable (${r.status}); made again`);
    await deleteDatabase(env, child.id, r.id, false);
  }
  const wanted = theirs.filter((db) => !have.has(db.env_var));
  if (!wanted.length) {
    if (mine.length) say(`preview databases kept: ${[...have].join(', ')}`);
    return;
  }
  const pending: Promise<unknown>[] = [];
  const made: Array<{ from: AppDatabaseTable; to: string }> = [];
  const what = (db: AppDatabaseTable) => `${db.env_var} (${db.engine} ${db.version})`;
  let current: AppDatabaseTable | null = null;
  try {
    for (const db of wanted) {
      current = db;
      say(`preview database ${what(db)}: making a new ${settings.database === 'empty' ? 'empty ' : ''}one`);
      const view = await createDatabase(
        env,
        child,
        { engine: db.engine, version: db.version, env_var: db.env_var },
        (p) => pending.push(p),
      );
      made.push({ from: db, to: view.id });
    }
    current = null;
    await Promise.all(pending);
    signal.throwIfAborted();
    for (const { from, to } of made) {
      current = from;
      const row = await getDatabaseRow(env.db, child.id, to);
      if (row.status !== 'ready') throw new Error(row.error ?? `it is ${row.status}`);
      if (settings.database !== 'latest_backup') {
        say(`preview database ${what(from)}: ready`);
        continue;
      }
      const [run] = await keptRunsOfDatabase(env.db, { id: from.id, app_id: parent.id }, 1);
      if (!run) {
        say(`preview database ${what(from)}: ready, empty (the app's database has no backup to load)`);
        continue;
      }
      say(`preview database ${what(from)}: loading backup run ${run.id} of ${run.started_at}`);
      try {
        await restoreDatabaseFromRun(env, row, run);
      } catch (e) {
        throw new Error(`the restore of the app's backup run ${run.id} failed: ${message(e)}`);
      }
      signal.throwIfAborted();
      say(`preview database ${what(from)}: ready, loaded with backup run ${run.id}`);
    }
  } catch (e) {
    // Provisioning still under way finishes first: what it makes is then removed, not left behind.
    await Promise.allSettled(pending);
    for (const { to } of made)
      await deleteDatabase(env, child.id, to, false).catch((err) =>
        env.log.warn(
          { app: child.name, database: to, err: message(err) },
          'preview database not removed after its deployment failed; it goes with the preview',
        ),
      );
    if (signal.aborted) throw e;
    const which = current ? ` ${what(current)}` : '';
    throw new Error(`preview database${which} could not be made: ${message(e)}`);
  }
}
