// Every area's wire shapes in one namespace: the OpenAPI generator (runtime/openapi.ts) finds the
// named shapes among its exports. Handlers import from the area's own file.
export * from './common.js';
export * from './addons.js';
export * from './alerts.js';
export * from './apps.js';
export * from './audit.js';
export * from './auth.js';
export * from './backups.js';
export * from './databases.js';
export * from './deployments.js';
export * from './domains.js';
export * from './drains.js';
export * from './instance.js';
export * from './metrics.js';
export * from './notifications.js';
export * from './security.js';
export * from './webhooks.js';
export * from './previews.js';
export * from './nodes.js';
export * from './jobs.js';
export * from './registries.js';
