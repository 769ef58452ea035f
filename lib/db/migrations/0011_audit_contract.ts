import type { Kysely, Migration } from 'kysely';

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

export const migration: Migration = {
  async up(db: Kysely<any>) {
    for (const name of ['route', 'actor_type', 'token_id', 'summary'])
      await db.schema.alterTable('audit').addColumn(name, 'text').execute();
    const rows = (await db
      .selectFrom('audit')
      .select(['id', 'action', 'via', 'actor_id', 'actor', 'detail'])
      .execute()) as Array<{
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
      else if (/^app\.(start|stop|restart)$/.test(r.action) && detail.includes('"service":'))
        route = `POST /api/apps/{id}/services/{name}/${r.action.slice(4)}`;
      const actorType =
        r.via === 'token'
          ? 'token'
          : r.via === 'webhook'
            ? 'system'
            : r.actor_id !== null || r.actor !== null || r.via === 'password' || r.via === 'totp'
              ? 'user'
              : 'system';
      await db.updateTable('audit').set({ route, actor_type: actorType }).where('id', '=', r.id).execute();
    }
    await db.schema.createIndex('audit_route').on('audit').columns(['route', 'id']).execute();
  },
};
