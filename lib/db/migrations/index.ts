// Migrations are frozen in time, one a file, and listed statically: never edit one that has shipped,
// add the next file and list it here.
import type { Migration } from 'kysely';
import { migration as m0001 } from './0001_foundation.js';
import { migration as m0002 } from './0002_apps_deployments.js';
import { migration as m0003 } from './0003_deploy_queue.js';
import { migration as m0004 } from './0004_webhooks_keys.js';
import { migration as m0005 } from './0005_webhook_pushes.js';
import { migration as m0006 } from './0006_edge.js';
import { migration as m0007 } from './0007_notifications.js';
import { migration as m0008 } from './0008_data.js';
import { migration as m0009 } from './0009_series_steps.js';
import { migration as m0010 } from './0010_audit_state.js';
import { migration as m0011 } from './0011_audit_contract.js';
import { migration as m0012 } from './0012_webhook_delivery_log.js';
import { migration as m0013 } from './0013_instance_backup.js';
import { migration as m0014 } from './0014_deployment_commit_pin.js';
import { migration as m0015 } from './0015_people.js';
import { migration as m0016 } from './0016_build_limits.js';
import { migration as m0017 } from './0017_audit_app.js';
import { migration as m0018 } from './0018_sleep.js';
import { migration as m0019 } from './0019_previews.js';
import { migration as m0020 } from './0020_preview_sleep.js';
import { migration as m0021 } from './0021_cluster_services.js';
import { migration as m0022 } from './0022_username_case.js';
import { migration as m0023 } from './0023_images_registries.js';
import { migration as m0024 } from './0024_jobs.js';
import { migration as m0025 } from './0025_observe.js';
import { migration as m0026 } from './0026_service_drain.js';
import { migration as m0027 } from './0027_deployment_actor.js';
import { migration as m0028 } from './0028_deployment_config.js';

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
  '0015_people': m0015,
  '0016_build_limits': m0016,
  '0017_audit_app': m0017,
  '0018_sleep': m0018,
  '0019_previews': m0019,
  '0020_preview_sleep': m0020,
  '0021_cluster_services': m0021,
  '0022_username_case': m0022,
  '0023_images_registries': m0023,
  '0024_jobs': m0024,
  '0025_observe': m0025,
  '0026_service_drain': m0026,
  '0027_deployment_actor': m0027,
  '0028_deployment_config': m0028,
};
