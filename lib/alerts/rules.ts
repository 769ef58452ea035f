// The vocabulary of alert rules: metrics, comparisons, states, events. Written once; the wire
// schemas, the types and the evaluator derive from these lists.
export const ALERT_METRICS = [
  'cpu_percent',
  'memory_percent',
  'disk_percent',
  'restarts',
  'unhealthy',
  'http_5xx_rate',
  'p95_latency_ms',
  'certificate_days_left',
  'backup_age_hours',
  'backup_age_schedules',
] as const;
export type AlertMetric = (typeof ALERT_METRICS)[number];

export const ALERT_OPS = ['>', '<'] as const;
export type AlertOp = (typeof ALERT_OPS)[number];

export const ALERT_STATES = ['ok', 'firing'] as const;
export type AlertState = (typeof ALERT_STATES)[number];

export const ALERT_EVENT_KINDS = ['fired', 'resolved'] as const;
export type AlertEventKind = (typeof ALERT_EVENT_KINDS)[number];

/** Metrics measured on the host only (a rule on an app cannot use them). */
export const HOST_ONLY: ReadonlySet<AlertMetric> = new Set(['disk_percent']);

/**
 * Metrics counted over a window (the rule's for_s, at least a minute): the rule fires at the first
 * evaluation whose window meets the condition. The others are levels: the condition must hold
 * for for_s without a break.
 */
export const WINDOWED: ReadonlySet<AlertMetric> = new Set(['restarts', 'http_5xx_rate', 'p95_latency_ms']);

export const DEFAULT_FOR_S = 300;

export interface AlertRule {
  id: string;
  name: string;
  app_id: string | null;
  metric: AlertMetric;
  op: AlertOp;
  threshold: number;
  for_s: number;
  channels: string[];
  enabled: boolean;
  state: AlertState;
  since: string | null;
  /** The value measured at the last evaluation (null: nothing to measure). */
  value: number | null;
  evaluated_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface AlertEvent {
  id: string;
  rule_id: string | null;
  rule: string;
  app_id: string | null;
  metric: AlertMetric;
  kind: AlertEventKind;
  value: number | null;
  threshold: number;
  detail: string | null;
  at: string;
  notified: boolean;
  notified_at: string | null;
}

export const compare = (value: number, op: AlertOp, threshold: number): boolean =>
  op === '>' ? value > threshold : value < threshold;
