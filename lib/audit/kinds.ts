// The names of the diffable target kinds and the shape of a target's state, apart from their
// readers (lib/revert/state.ts): listing and writing audit entries needs only these, and the
// readers pull in most product areas.
export const STATE_KIND_NAMES = [
  'app_env',
  'app',
  'service',
  'triggers',
  'domain',
  'base_domain',
  'deploy_concurrency',
  'notification_channel',
  'job',
  'alert_rule',
  'log_drain',
] as const;

export type StateKindName = (typeof STATE_KIND_NAMES)[number];

// A route's audit declaration (lib/http/route.ts) names one of these kinds.
declare module '../http/route.js' {
  interface AuditStateKinds extends Record<StateKindName, true> {}
}

const names: ReadonlySet<string> = new Set(STATE_KIND_NAMES);
export const isStateKind = (k: string | null | undefined): k is StateKindName => k != null && names.has(k);

export interface Masked {
  masked: true;
  sealed: string;
  binding: string;
  fp: string;
  /** A non-secret hint (a notification URL's host), shown instead of the value. */
  hint?: string;
}
export type FieldValue = string | number | boolean | null | Masked | { [k: string]: unknown } | unknown[];
/** Field -> value; `null` when the target does not exist (before a creation, after a deletion). */
export type State = Record<string, FieldValue>;

export const FP_PURPOSE = 'audit-state';

export const isMasked = (v: unknown): v is Masked =>
  typeof v === 'object' && v !== null && (v as Masked).masked === true;
