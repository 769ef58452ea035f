// A git app's webhook (its absolute URL, the secret regenerated and shown once, the last
// deliveries and what each came to), deploy triggers, and the deploy key (copy, regenerate, test
// against the repository with `git ls-remote` on the control plane). Controls follow permissions.
import { useState } from 'preact/hooks';
import * as api from '../../api';
import type { AppSource } from '../../api';
import { Badge, ErrorNote, When, useAction, useLoad } from '../../ui';
import { useCan } from '../../access';

function Copy({ text, label }: { text: string; label: string }) {
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      aria-label={label}
      onClick={() => {
        void navigator.clipboard?.writeText(text).then(() => {
          setDone(true);
          setTimeout(() => setDone(false), 1500);
        });
      }}
    >
      {done ? 'Copied' : 'Copy'}
    </button>
  );
}

export function GitTab({ id, source }: { id: string; source: AppSource }) {
  // Only a git app is deployed by pushes (the tab is not offered for the others).
  if (source.type !== 'git') return null;
  return (
    <>
      <Webhook id={id} />
      <Deliveries id={id} />
      <Triggers id={id} />
      <DeployKey id={id} />
    </>
  );
}

/** The API's URL, absolute: a path alone is completed with the address this page came from. */
const absolute = (url: string) => (url.startsWith('/') ? `${location.origin}${url}` : url);

function Deliveries({ id }: { id: string }) {
  const list = useLoad(() => api.webhookDeliveries(id).then((r) => r.items), [id]);
  return (
    <section class="card" aria-labelledby="deliveries-h">
      <div class="row spread">
        <h2 id="deliveries-h">Webhook deliveries</h2>
        <button type="button" onClick={() => void list.reload()}>
          Refresh
        </button>
      </div>
      <ErrorNote error={list.error} />
      {list.data?.length === 0 && <p class="muted">No delivery yet.</p>}
      {list.data && list.data.length > 0 && (
        <table data-testid="webhook-deliveries">
          <thead>
            <tr>
              <th>When</th>
              <th>From</th>
              <th>Ref</th>
              <th>Outcome</th>
            </tr>
          </thead>
          <tbody>
            {list.data.map((d) => (
              <tr key={d.id}>
                <td>
                  <When at={d.at} />
                </td>
                <td>
                  {d.provider ?? 'unknown'} <span class="muted small">{d.event ?? ''}</span>
                </td>
                <td class="mono small">
                  {d.ref ?? '—'}
                  {d.commit && <span class="muted"> {d.commit.slice(0, 7)}</span>}
                </td>
                <td>
                  <Badge
                    status={d.outcome === 'rejected' ? 'error' : d.outcome === 'deployed' ? 'ok' : d.outcome}
                  />
                  {d.reason && <div class="muted small">{d.reason}</div>}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function Webhook({ id }: { id: string }) {
  const hook = useLoad(() => api.getWebhook(id), [id]);
  const can = useCan();
  const [secret, setSecret] = useState<string | null>(null);
  const act = useAction();
  return (
    <section class="card" aria-labelledby="hook-h">
      <h2 id="hook-h">Webhook</h2>
      <ErrorNote error={hook.error ?? act.error} />
      {hook.data && (
        <>
          <p class="row wrap">
            <code data-testid="webhook-url">{absolute(hook.data.url)}</code>
            <Copy text={absolute(hook.data.url)} label="Copy the webhook URL" />
          </p>
          {hook.data.url.startsWith('/') && (
            <p class="muted small">
              Completed with the address of this page; your forge must reach the control plane there (set
              SVC_PUBLIC_URL when it reaches it elsewhere).
            </p>
          )}
          <p class="muted small">
            {hook.data.secret_set
              ? 'A secret is set.'
              : 'No secret yet: generate one and paste it into the forge.'}{' '}
            Accepted from {hook.data.providers.join(', ')}.
          </p>
        </>
      )}
      {secret && (
        <div class="notice" data-testid="webhook-secret">
          <p>The new secret, shown once:</p>
          <p class="row">
            <code>{secret}</code>
            <Copy text={secret} label="Copy the webhook secret" />
          </p>
          <button type="button" onClick={() => setSecret(null)}>
            Done
          </button>
        </div>
      )}
      {can('app.triggers', id) && (
        <button
          type="button"
          disabled={act.busy}
          onClick={() => {
            if (
              hook.data?.secret_set &&
              !confirm('Replace the webhook secret? The forge must be given the new one.')
            )
              return;
            void act.run(async () => {
              setSecret((await api.regenerateWebhook(id)).secret);
              await hook.reload();
            });
          }}
        >
          {hook.data?.secret_set ? 'Regenerate secret' : 'Generate secret'}
        </button>
      )}
    </section>
  );
}

function Triggers({ id }: { id: string }) {
  const triggers = useLoad(() => api.listTriggers(id).then((r) => r.items), [id]);
  const can = useCan();
  const writable = can('app.triggers', id);
  const act = useAction();
  return (
    <section class="card" aria-labelledby="trig-h">
      <h2 id="trig-h">Triggers</h2>
      <ErrorNote error={triggers.error ?? act.error} />
      {triggers.data?.length === 0 && <p class="muted">No triggers: a webhook delivery deploys nothing.</p>}
      {triggers.data && triggers.data.length > 0 && (
        <table>
          <thead>
            <tr>
              <th>Event</th>
              <th>Pattern</th>
              <th>Enabled</th>
              {writable && (
                <th>
                  <span class="sr-only">Actions</span>
                </th>
              )}
            </tr>
          </thead>
          <tbody>
            {triggers.data.map((t) => (
              <tr key={t.id} data-testid="trigger-row">
                <td>{t.event}</td>
                <td class="mono">{t.pattern}</td>
                <td>{t.enabled ? 'yes' : 'no'}</td>
                {writable && (
                  <td>
                    <button
                      type="button"
                      aria-label={`Delete the ${t.event} trigger ${t.pattern}`}
                      onClick={() =>
                        void act.run(async () => {
                          await api.deleteTrigger(id, t.id);
                          await triggers.reload();
                        })
                      }
                    >
                      Delete
                    </button>
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {writable && <AddTrigger id={id} onAdded={triggers.reload} />}
    </section>
  );
}

function AddTrigger({ id, onAdded }: { id: string; onAdded: () => Promise<void> }) {
  const [event, setEvent] = useState<api.Trigger['event']>('push');
  const [pattern, setPattern] = useState('');
  const act = useAction();
  return (
    <>
      <form
        class="row wrap"
        onSubmit={(e) => {
          e.preventDefault();
          void act.run(async () => {
            await api.addTrigger(id, { event, pattern: pattern.trim(), enabled: true });
            setPattern('');
            await onAdded();
          });
        }}
      >
        <label>
          Event
          <select
            value={event}
            onChange={(e) => setEvent((e.target as HTMLSelectElement).value as api.Trigger['event'])}
          >
            <option value="push">push</option>
            <option value="tag">tag</option>
          </select>
        </label>
        <label>
          Branch or tag pattern
          <input
            name="pattern"
            class="mono"
            required
            placeholder="main"
            value={pattern}
            onInput={(e) => setPattern((e.target as HTMLInputElement).value)}
          />
        </label>
        <button type="submit" disabled={act.busy}>
          Add trigger
        </button>
      </form>
      <ErrorNote error={act.error} />
    </>
  );
}

function DeployKey({ id }: { id: string }) {
  // No key yet is a 404: shown as "none", not as an error.
  const key = useLoad(
    () =>
      api
        .getDeployKey(id)
        .catch((e) => (e instanceof api.ApiError && e.status === 404 ? null : Promise.reject(e))),
    [id],
  );
  const [test, setTest] = useState<{ ok: boolean; message: string } | null>(null);
  const act = useAction();
  const can = useCan();
  return (
    <section class="card" aria-labelledby="key-h">
      <h2 id="key-h">Deploy key</h2>
      <ErrorNote error={key.error ?? act.error} />
      {key.data === null && !key.error && (
        <p class="muted">
          No deploy key: generate one and add its public half to the repository as a read-only deploy key.
        </p>
      )}
      {key.data && (
        <>
          <pre class="mono wrap-any" data-testid="deploy-key">
            {key.data.public_key}
          </pre>
          <p class="muted small">
            <span class="mono">{key.data.fingerprint}</span>, created <When at={key.data.created_at} />
          </p>
        </>
      )}
      {test && (
        <p role="status" class={test.ok ? 'ok' : 'error'} data-testid="deploy-key-test">
          {test.ok ? 'Connected: ' : 'Failed: '}
          {test.message}
        </p>
      )}
      <div class="row">
        {key.data && <Copy text={key.data.public_key} label="Copy the public key" />}
        {key.data && can('app.deploy', id) && (
          <button
            type="button"
            disabled={act.busy}
            onClick={() => void act.run(async () => setTest(await api.testDeployKey(id)))}
          >
            Test connection
          </button>
        )}
        {can('app.admin', id) && (
          <button
            type="button"
            disabled={act.busy}
            onClick={() => {
              if (
                key.data &&
                !confirm('Replace the deploy key? The repository must be given the new public key.')
              )
                return;
              void act.run(async () => {
                await api.regenerateDeployKey(id);
                setTest(null);
                await key.reload();
              });
            }}
          >
            {key.data ? 'Regenerate' : 'Generate key'}
          </button>
        )}
      </div>
    </section>
  );
}
