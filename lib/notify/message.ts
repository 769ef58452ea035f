// A notification is a message before it is a payload: one event becomes {title, text, fields,
// tone, link}, then Discord's embed or Slack's blocks. No secret ever enters an event's data.

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
  job_failed: 'failure',
};

const COLOUR: Record<Tone, number> = {
  success: 0x2e9d4f,
  failure: 0xd64541,
  warning: 0xe8a33d,
  info: 0x3b7dd8,
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
        fields.push({ name: 'Last log lines', value: d.last_logs.map(String).join('\n') });
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

const cut = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

/** Discord webhook: one embed, coloured by outcome. Limits from Discord's embed rules. */
export function discordPayload(m: Message): unknown {
  return {
    username: 'svc',
    allowed_mentions: { parse: [] },
    embeds: [
      {
        title: cut(m.title, 256),
        description: cut(m.text, 4000),
        color: COLOUR[m.tone],
        ...(m.link ? { url: m.link } : {}),
        fields: m.fields.slice(0, 25).map((f) => ({
          name: cut(f.name, 256),
          value: cut(f.name === 'Last log lines' ? '```\n' + cut(f.value, 1000) + '\n```' : f.value, 1024),
          inline: f.name !== 'Last log lines',
        })),
        timestamp: m.at,
        footer: { text: m.event },
      },
    ],
  };
}

// Slack's mrkdwn treats &, < and > as markup: escaped so an app's text cannot forge links or mentions.
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** Slack incoming webhook: `text` (the notification fallback) and blocks. */
export function slackPayload(m: Message): unknown {
  const blocks: unknown[] = [{ type: 'header', text: { type: 'plain_text', text: cut(m.title, 150) } }];
  if (m.text) blocks.push({ type: 'section', text: { type: 'mrkdwn', text: cut(esc(m.text), 2900) } });
  const short = m.fields.filter((f) => f.name !== 'Last log lines').slice(0, 10);
  if (short.length)
    blocks.push({
      type: 'section',
      fields: short.map((f) => ({ type: 'mrkdwn', text: cut(`*${esc(f.name)}*\n${esc(f.value)}`, 2000) })),
    });
  const logs = m.fields.find((f) => f.name === 'Last log lines');
  if (logs)
    blocks.push({
      type: 'section',
      text: { type: 'mrkdwn', text: cut('```' + esc(logs.value) + '```', 2900) },
    });
  const ctx = [
    `${m.tone === 'success' ? '✅' : m.tone === 'failure' ? '❌' : m.tone === 'warning' ? '⚠️' : 'ℹ️'} ${m.event}`,
    m.at,
  ];
  if (m.link) ctx.push(`<${m.link}|Open in svc>`);
  blocks.push({ type: 'context', elements: [{ type: 'mrkdwn', text: ctx.join(' · ') }] });
  return { text: cut(`${m.title}${m.text ? ` — ${m.text}` : ''}`, 3000), blocks };
}
