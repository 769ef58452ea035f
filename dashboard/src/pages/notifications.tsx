// Notification channels: add (a kind, its URL, events; an email channel's recipients; a webhook's
// signing secret shown once), enable/disable, send a test and see its answer, the delivery log,
// delete.
import { useState } from 'preact/hooks';
import * as api from '../api';
import type { NotificationChannel, NotificationDelivery } from '../api';
import { Badge, ErrorNote, When, useAction, useLoad } from '../ui';
import { useTitle } from '../title';

type EventName = NotificationChannel['events'][number];

/** Checked for a new channel: what someone must act on (failures, crashes, expiring certificates). */
export function defaultEvents(events: readonly string[]): Set<string> {
  return new Set(events.filter((e) => /fail|crash|error|expir|down|anomal|oom|unhealthy/.test(e)));
}

export function NotificationsPage() {
  useTitle('Notifications');
  const channels = useLoad(() => api.listChannels());
  return (
    <main>
      <h1>Notifications</h1>
      <section class="card" aria-labelledby="channels-h">
        <h2 id="channels-h">Channels</h2>
        <ErrorNote error={channels.error} />
        {channels.data?.items.length === 0 && <p class="muted">No channels yet.</p>}
        <ul class="plain">
          {(channels.data?.items ?? []).map((c) => (
            <Channel key={c.id} c={c} onChange={channels.reload} />
          ))}
        </ul>
      </section>
      {channels.data && (
        <NewChannel events={channels.data.events as EventName[]} onCreated={channels.reload} />
      )}
    </main>
  );
}

function Channel({ c, onChange }: { c: NotificationChannel; onChange: () => Promise<void> }) {
  const act = useAction();
  const [test, setTest] = useState<{ ok: boolean; status: number | null; error?: string } | null>(null);
  const [log, setLog] = useState<NotificationDelivery[] | null>(null);
  const loadLog = async () => setLog((await api.channelDeliveries(c.id)).items);
  return (
    <li class="channel" data-testid="channel">
      <div class="row">
        <strong>{c.name}</strong>{' '}
        <span class="muted">
          {c.kind} · <span class="mono">{c.url_hint}</span>
        </span>
        <Badge status={c.enabled ? 'enabled' : 'disabled'} />
      </div>
      <p class="small muted">Events: {c.events.length ? c.events.join(', ') : 'none'}</p>
      {c.last_delivery && (
        <p class="small">
          Last delivery: {c.last_delivery.ok ? 'ok' : 'failed'} <When at={c.last_delivery.at} />
          {c.last_delivery.error && ` — ${c.last_delivery.error}`}
        </p>
      )}
      <div class="row">
        <button
          type="button"
          disabled={act.busy}
          onClick={() =>
            act.run(async () => {
              setTest(await api.testChannel(c.id));
              await loadLog();
            })
          }
        >
          Send test <span class="sr-only">to {c.name}</span>
        </button>
        <button
          type="button"
          disabled={act.busy}
          onClick={() =>
            act.run(async () => {
              await api.patchChannel(c.id, { enabled: !c.enabled });
              await onChange();
            })
          }
        >
          {c.enabled ? 'Disable' : 'Enable'} <span class="sr-only">{c.name}</span>
        </button>
        <button
          type="button"
          aria-expanded={log !== null}
          onClick={() => (log ? setLog(null) : act.run(loadLog))}
        >
          Delivery log <span class="sr-only">of {c.name}</span>
        </button>
        <button
          type="button"
          class="danger"
          disabled={act.busy}
          onClick={() =>
            confirm(`Delete the channel ${c.name}?`) &&
            act.run(async () => {
              await api.deleteChannel(c.id);
              await onChange();
            })
          }
        >
          Delete <span class="sr-only">{c.name}</span>
        </button>
      </div>
      <ErrorNote error={act.error} />
      {test && (
        <p role="status" data-testid="test-result" class={test.ok ? 'notice' : 'error'}>
          Test {test.ok ? 'delivered' : 'failed'}
          {test.status !== null ? ` (HTTP ${test.status})` : ''}
          {test.error ? `: ${test.error}` : ''}
        </p>
      )}
      {log && (
        <table class="stack-sm" data-testid="deliveries">
          <caption class="sr-only">Deliveries of {c.name}</caption>
          <thead>
            <tr>
              <th>When</th>
              <th>Event</th>
              <th>Result</th>
              <th>Attempts</th>
            </tr>
          </thead>
          <tbody>
            {log.length === 0 && (
              <tr>
                <td colSpan={4} class="muted">
                  Nothing sent yet.
                </td>
              </tr>
            )}
            {log.map((d, i) => (
              <tr key={`${d.at}-${i}`}>
                <td>
                  <When at={d.at} />
                </td>
                <td class="mono">{d.event}</td>
                <td>
                  {d.ok ? 'ok' : 'failed'}
                  {d.status !== null ? ` (${d.status})` : ''}
                  {d.error ? ` — ${d.error}` : ''}
                </td>
                <td>{d.attempts}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </li>
  );
}

type Kind = NotificationChannel['kind'];

/** What each kind's URL is, as the form asks for it. */
const KINDS: ReadonlyArray<readonly [Kind, string, string]> = [
  ['discord', 'Discord', 'Webhook URL'],
  ['slack', 'Slack', 'Webhook URL'],
  ['webhook', 'Webhook (signed JSON)', 'URL'],
  ['email', 'Email (SMTP)', 'SMTP URL (smtp://user:password@host:587?from=address, or smtps://)'],
  ['telegram', 'Telegram', 'https://api.telegram.org/bot<token>/sendMessage?chat_id=<chat>'],
  ['ntfy', 'ntfy', 'https://<server>/<topic>'],
  ['gotify', 'Gotify', 'https://<server>/message?token=<application token>'],
];

function NewChannel({ events, onCreated }: { events: EventName[]; onCreated: () => Promise<void> }) {
  const [kind, setKind] = useState<Kind>('discord');
  const [name, setName] = useState('');
  const [url, setUrl] = useState('');
  const [to, setTo] = useState('');
  const [secret, setSecret] = useState<string | null>(null);
  const [picked, setPicked] = useState<Set<EventName>>(() => defaultEvents(events) as Set<EventName>);
  const act = useAction();
  return (
    <section class="card" aria-labelledby="new-channel-h">
      <h2 id="new-channel-h">New channel</h2>
      <form
        class="stack"
        onSubmit={(e) => {
          e.preventDefault();
          void act.run(async () => {
            const made = await api.createChannel({
              kind,
              name: name.trim(),
              url: url.trim(),
              events: events.filter((x) => picked.has(x)),
              ...(kind === 'email' ? { to: to.split(/[\s,]+/).filter(Boolean) } : {}),
            });
            setSecret(made.secret ?? null);
            setName('');
            setUrl('');
            setTo('');
            await onCreated();
          });
        }}
      >
        <label>
          Kind
          <select
            name="kind"
            value={kind}
            onChange={(e) => setKind((e.target as HTMLSelectElement).value as Kind)}
          >
            {KINDS.map(([k, label]) => (
              <option key={k} value={k}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <label>
          Name
          <input
            name="channel-name"
            required
            value={name}
            onInput={(e) => setName((e.target as HTMLInputElement).value)}
          />
        </label>
        <KindFields kind={kind} url={url} to={to} setUrl={setUrl} setTo={setTo} />
        <EventsField events={events} picked={picked} onChange={setPicked} />
        <ErrorNote error={act.error} />
        {secret && <SecretNote secret={secret} />}
        <button type="submit" class="primary" disabled={act.busy}>
          Add channel
        </button>
      </form>
    </section>
  );
}

function EventsField(props: {
  events: EventName[];
  picked: Set<EventName>;
  onChange: (picked: Set<EventName>) => void;
}) {
  const { events, picked } = props;
  return (
    <fieldset>
      <legend>Events</legend>
      {events.map((ev) => (
        <label class="inline" key={ev}>
          <input
            type="checkbox"
            checked={picked.has(ev)}
            onChange={() => {
              const n = new Set(picked);
              if (n.has(ev)) n.delete(ev);
              else n.add(ev);
              props.onChange(n);
            }}
          />{' '}
          {ev.replace(/_/g, ' ')}
        </label>
      ))}
    </fieldset>
  );
}

/** A webhook channel's signing secret, answered by its creation only. */
function SecretNote({ secret }: { secret: string }) {
  return (
    <p role="status" class="notice" data-testid="channel-secret">
      Signing secret (shown once; deliveries carry <code>X-Svc-Signature: sha256=…</code>, the HMAC of the
      body): <code class="mono">{secret}</code>
    </p>
  );
}

/** The URL as the kind names it, and an email channel's recipients. */
function KindFields(props: {
  kind: Kind;
  url: string;
  to: string;
  setUrl: (v: string) => void;
  setTo: (v: string) => void;
}) {
  return (
    <>
      <label>
        {KINDS.find(([k]) => k === props.kind)?.[2] ?? 'URL'}
        <input
          name="channel-url"
          type={props.kind === 'email' ? 'text' : 'url'}
          required
          value={props.url}
          onInput={(e) => props.setUrl((e.target as HTMLInputElement).value)}
        />
      </label>
      {props.kind === 'email' && (
        <label>
          Recipients
          <input
            name="channel-to"
            required
            placeholder="ops@example.com, oncall@example.com"
            value={props.to}
            onInput={(e) => props.setTo((e.target as HTMLInputElement).value)}
          />
        </label>
      )}
    </>
  );
}
