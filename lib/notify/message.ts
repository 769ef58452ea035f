// A notification is a message before it is a payload: one event becomes {title, text, fields,
// tone, link}, then each channel kind's payload (lib/notify/kinds/). No secret ever enters an event's data.

export const NOTIFY_EVENTS = [
  'deploy_succeeded',
  'deploy_failed',
  'traffic_anomaly',
  'app_crashed',
  'certificate_error',
  'certificate_expiring',
  'backup_succeeded',
  'backup_failed',
  'restore_finished',
  'control_plane_started',
  'job_failed',
  'alert_fired',
  'alert_resolved',
] as const;
export type NotifyEvent = (typeof NOTIFY_EVENTS)[number];

export function isNotifyEvent(v: unknown): v is NotifyEvent {
  return typeof v === 'string' && (NOTIFY_EVENTS as readonly string[]).includes(v);
}

export type Tone = 'success' | 'failure' | 'warning' | 'info';

export interface Message {
  event: NotifyEvent;
  title: string;
  text: string;
  fields: Array<{ name: string; value: string }>;
  tone: Tone;
  link: string | null;
  at: string;
}

const TONE: Record<NotifyEvent, Tone> = {
  deploy_succeeded: 'success',
  deploy_failed: 'failure',
  traffic_anomaly: 'warning',
  app_crashed: 'failure',
  certificate_error: 'failure',
  certificate_expiring: 'warning',
  backup_succeeded: 'success',
  backup_failed: 'failure',
  restore_finished: 'info',
  control_plane_started: 'info',
  alert_fired: 'failure',
  alert_resolved: 'success',
  job_failed: 'failure',
};

type Data = Record<string, unknown>;
const str = (v: unknown): string | null =>
  typeof v === 'string' && v ? v : typeof v === 'number' ? String(v) : null;

/** Where an operator reads more: the app's page on the control domain, when there is one. */
function linkFor(base: string | null, d: Data): string | null {
  if (!base) return null;
  const app = str(d.app_id);
  return app ? `${base}/apps/${encodeURIComponent(app)}` : base;
}

export function buildMessage(
  event: NotifyEvent,
  d: Data,
  base: string | null,
  at = new Date().toISOString(),
): Message {
  if (event === 'alert_fired' || event === 'alert_resolved') return alertMessage(event, d, base, at);
  const app = str(d.app) ?? str(d.app_name);
  const fields: Message['fields'] = [];
  const add = (name: string, v: unknown) => {
    const s = str(v);
    if (s) fields.push({ name, value: s });
  };
  let title: string;
  let text: string;
  switch (event) {
    case 'deploy_succeeded':
      title = `Deployed ${app ?? 'an app'}`;
      text = `Deployment ${str(d.deployment_id) ?? ''} of ${app ?? 'the app'} succeeded.`;
      add('App', app);
      add('Trigger', d.trigger);
      add('Ref', d.ref);
      add('Commit', str(d.commit)?.slice(0, 12));
      add('Image', d.image);
      add('Preview', d.preview_url);
      break;
    case 'deploy_failed':
      title = `Deployment of ${app ?? 'an app'} failed`;
      text = str(d.error) ?? 'The deployment failed.';
      add('App', app);
      add('Trigger', d.trigger);
      add('Ref', d.ref);
      add('Commit', str(d.commit)?.slice(0, 12));
      add('Preview', d.preview_url);
      break;
    case 'traffic_anomaly':
      title = `Traffic anomaly: ${str(d.kind) === 'error_surge' ? 'error surge' : 'request spike'} from ${str(d.ip) ?? 'an address'}`;
      text = str(d.detail) ?? 'Unusual traffic was seen.';
      add('Address', d.ip);
      add('Kind', d.kind);
      add('Count', d.count);
      break;
    case 'app_crashed':
      title = `${app ?? 'An app'}${str(d.service) ? `/${str(d.service)}` : ''} crashed${d.oom ? ' (out of memory)' : ''}`;
      text = str(d.detail) ?? 'A container stopped unexpectedly.';
      add('App', app);
      add('Service', d.service);
      add('Exit code', d.exit_code);
      add('Episode', d.kind);
      if (typeof d.oom === 'boolean') add('OOM killed', d.oom ? 'yes' : 'no');
      if (Array.isArray(d.last_logs) && d.last_logs.length)
        fields.push({ name: LOG_FIELD, value: d.last_logs.map(String).join('\n') });
      break;
    case 'certificate_error':
    case 'certificate_expiring':
      title =
        event === 'certificate_error'
          ? `Certificate problem for ${str(d.hostname) ?? 'a domain'}`
          : `Certificate for ${str(d.hostname) ?? 'a domain'} expires soon`;
      text = str(d.detail) ?? '';
      add('Host', d.hostname);
      add('Expires', d.not_after);
      break;
    case 'job_failed': {
      const job = str(d.job) ?? 'A job';
      title = `${job} of ${app ?? 'an app'} ${str(d.status) === 'timed_out' ? 'timed out' : str(d.status) === 'interrupted' ? 'was interrupted' : 'failed'}`;
      text = str(d.error) ?? 'The run failed.';
      add('App', app);
      add('Job', d.job);
      add('Run', d.run_id);
      add('Trigger', d.trigger);
      add('Exit code', d.exit_code);
      break;
    }
    case 'control_plane_started':
      title = 'Control plane started';
      text = `svc ${str(d.version) ?? ''} is up.`.replace('  ', ' ');
      add('Host', d.host);
      break;
    default: {
      // The instance backup's events name the instance instead of an app.
      const what = app ?? (str(d.instance_id) ? 'the instance' : null);
      title = `${event.replace(/_/g, ' ')}${what ? `: ${what}` : ''}`;
      text = str(d.detail) ?? str(d.error) ?? '';
      add('App', app);
      add('Instance', d.instance_id);
    }
  }
  return { event, title, text, fields, tone: TONE[event], link: linkFor(base, d), at: str(d.at) ?? at };
}

/** An alert rule's move: what fired (or resolved), on which app, the value against the threshold. */
function alertMessage(
  event: 'alert_fired' | 'alert_resolved',
  d: Data,
  base: string | null,
  at: string,
): Message {
  const app = str(d.app);
  const metric = str(d.metric) ?? 'The metric';
  const fields = (
    [
      ['App', app ?? 'the host'],
      ['Metric', d.metric],
      ['Value', d.value],
      ['Threshold', `${str(d.op) ?? ''} ${str(d.threshold) ?? ''}`.trim()],
      ['On', d.detail],
    ] as Array<[string, unknown]>
  ).flatMap(([name, v]) => (str(v) ? [{ name, value: str(v)! }] : []));
  return {
    event,
    title: `${event === 'alert_fired' ? 'Alert' : 'Resolved'}: ${str(d.rule) ?? 'a rule'}${app ? ` (${app})` : ''}`,
    text:
      event === 'alert_fired'
        ? `${metric} is ${str(d.value) ?? '?'} (${str(d.op) ?? ''} ${str(d.threshold) ?? ''}).`
        : `${metric} is back to ${str(d.value) ?? 'normal'}.`,
    fields,
    tone: TONE[event],
    link: linkFor(base, d),
    at: str(d.at) ?? at,
  };
}

/** Cuts `s` to `n` characters, an ellipsis marking the cut. */
export const cut = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

/** The one field that holds log lines (shown as a block, not inline). */
export const LOG_FIELD = 'Last log lines';
