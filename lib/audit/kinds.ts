// The names of the diffable target kinds, apart from their readers (state.ts): listing and writing
// audit entries needs only the names, and the readers pull in most product areas.
export const STATE_KIND_NAMES = ['app_env', 'app', 'service', 'triggers', 'domain', 'base_domain', 'deploy_concurrency', 'notification_channel'] as const;

export type StateKindName = (typeof STATE_KIND_NAMES)[number];

// A route's audit declaration (lib/http/route.ts) names one of these kinds.
declare module '../http/route.js' {
  interface AuditStateKinds extends Record<StateKindName, true> {}
}

const names: ReadonlySet<string> = new Set(STATE_KIND_NAMES);
export const isStateKind = (k: string | null | undefined): k is StateKindName => k != null && names.has(k);
