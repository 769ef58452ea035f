// Operators: invite (the one-time link is shown once), change role and apps, disable, delete, and
// send a reset link. Every change that widens or ends access asks for a step-up (api.ts retries).
import { useState } from 'preact/hooks';
import * as api from '../api';
import type { App, CreatedInvitation, Operator, Role } from '../api';
import { ErrorNote, When, useAction, useLoad } from '../ui';
import { useTitle } from '../title';

const ROLES: Role[] = ['owner', 'admin', 'deployer', 'viewer'];
const LIMITED: ReadonlySet<Role> = new Set(['deployer', 'viewer']);
const EXPIRY: Array<[string, number]> = [
  ['1 hour', 1],
  ['1 day', 24],
  ['2 days', 48],
  ['7 days', 168],
];

/** "Every app", or a chosen list: only deployers and viewers may be limited. */
function AppChoice({
  apps,
  value,
  onChange,
  name,
}: {
  apps: App[];
  value: string[] | null;
  onChange: (v: string[] | null) => void;
  name: string;
}) {
  return (
    <fieldset>
      <legend>Apps</legend>
      <label class="inline">
        <input
          type="checkbox"
          name={`${name}-all`}
          checked={value === null}
          onChange={(e) => onChange((e.target as HTMLInputElement).checked ? null : [])}
        />
        Every app
      </label>
      {value !== null &&
        (apps.length === 0 ? (
          <p class="muted">No apps yet.</p>
        ) : (
          apps.map((a) => (
            <label class="inline" key={a.id}>
              <input
                type="checkbox"
                name={`${name}-app`}
                value={a.id}
                checked={value.includes(a.id)}
                onChange={(e) =>
                  onChange(
                    (e.target as HTMLInputElement).checked
                      ? [...value, a.id]
                      : value.filter((x) => x !== a.id),
                  )
                }
              />
              {a.name}
            </label>
          ))
        ))}
    </fieldset>
  );
}

function OneTimeLink({
  title,
  link,
  onDone,
  testid,
}: {
  title: string;
  link: CreatedInvitation;
  onDone: () => void;
  testid: string;
}) {
  // Without a configured public address the API answers a path: it opens where this page does.
  const url = new URL(link.url, location.origin).href;
  return (
    <div class="notice" role="status" data-testid={testid}>
      <p>
        {title} (single use, until <When at={link.expires_at} />
        ). Copy it now: it is not shown again.
      </p>
      <code class="secret" data-testid={`${testid}-url`}>
        {url}
      </code>
      <div class="row">
        <button type="button" onClick={() => void navigator.clipboard?.writeText(url)}>
          Copy
        </button>
        <button type="button" onClick={onDone}>
          Done
        </button>
      </div>
    </div>
  );
}

function appNames(apps: App[], ids: string[] | null): string {
  if (ids === null) return 'every app';
  if (ids.length === 0) return 'no app';
  return ids.map((id) => apps.find((a) => a.id === id)?.name ?? id).join(', ');
}

export function OperatorsPage() {
  useTitle('Operators');
  const operators = useLoad(() => api.listOperators().then((r) => r.items));
  const invitations = useLoad(() => api.listInvitations().then((r) => r.items));
  const apps = useLoad(() => api.allApps());
  const [role, setRole] = useState<Role>('viewer');
  const [appIds, setAppIds] = useState<string[] | null>(null);
  const [hours, setHours] = useState('48');
  const [created, setCreated] = useState<CreatedInvitation | null>(null);
  const [reset, setReset] = useState<{ username: string; link: CreatedInvitation } | null>(null);
  const [editing, setEditing] = useState<string | null>(null);
  const inviteAct = useAction();
  const act = useAction();
  const allApps = apps.data ?? [];

  const reloadAll = () => Promise.all([operators.reload(), invitations.reload()]);

  return (
    <main>
      <h1>Operators</h1>
      <section class="card" aria-labelledby="invite-h">
        <h2 id="invite-h">Invite an operator</h2>
        <form
          class="stack"
          onSubmit={(e) => {
            e.preventDefault();
            void inviteAct.run(async () => {
              const r = await api.invite({
                role,
                app_ids: LIMITED.has(role) ? appIds : null,
                expires_in_hours: Number(hours),
              });
              setCreated(r.invitation);
              await invitations.reload();
            });
          }}
        >
          <div class="row wrap">
            <label>
              Role
              <select
                name="invite_role"
                value={role}
                onChange={(e) => setRole((e.target as HTMLSelectElement).value as Role)}
              >
                {ROLES.map((r) => (
                  <option key={r} value={r}>
                    {r}
                  </option>
                ))}
              </select>
            </label>
            <label>
              Link valid for
              <select
                name="invite_expiry"
                value={hours}
                onChange={(e) => setHours((e.target as HTMLSelectElement).value)}
              >
                {EXPIRY.map(([label, h]) => (
                  <option key={h} value={String(h)}>
                    {label}
                  </option>
                ))}
              </select>
            </label>
          </div>
          {LIMITED.has(role) && (
            <AppChoice apps={allApps} value={appIds} onChange={setAppIds} name="invite" />
          )}
          <div class="row">
            <button type="submit" class="primary" disabled={inviteAct.busy}>
              Create invitation link
            </button>
          </div>
        </form>
        <ErrorNote error={inviteAct.error} />
        {created && (
          <OneTimeLink
            title={`Invitation for a new ${created.role ?? 'operator'}`}
            link={created}
            onDone={() => setCreated(null)}
            testid="invite-link"
          />
        )}
      </section>

      <section class="card" aria-labelledby="operators-h">
        <h2 id="operators-h">Operators</h2>
        <ErrorNote error={operators.error} />
        <ErrorNote error={act.error} />
        {reset && (
          <OneTimeLink
            title={`Reset link for ${reset.username}: it sets a new password and turns two-factor authentication off`}
            link={reset.link}
            onDone={() => setReset(null)}
            testid="reset-link"
          />
        )}
        {operators.data && (
          <table class="stack-sm">
            <thead>
              <tr>
                <th>Username</th>
                <th>Role</th>
                <th>Apps</th>
                <th>Two-factor</th>
                <th>Status</th>
                <th>Last sign-in</th>
                <th>
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {operators.data.map((o) => (
                <OperatorRow
                  key={o.id}
                  o={o}
                  apps={allApps}
                  editing={editing === o.id}
                  busy={act.busy}
                  onEdit={() => setEditing(editing === o.id ? null : o.id)}
                  onSave={(patch) =>
                    act.run(async () => {
                      await api.patchOperator(o.id, patch);
                      setEditing(null);
                      await operators.reload();
                    })
                  }
                  onToggle={() =>
                    void act.run(async () => {
                      if (
                        !o.disabled &&
                        !confirm(`Disable ${o.username}? Their sessions and API tokens end at once.`)
                      )
                        return;
                      await api.patchOperator(o.id, { disabled: !o.disabled });
                      await operators.reload();
                    })
                  }
                  onReset={() =>
                    void act.run(async () => {
                      const r = await api.resetLink(o.id);
                      setReset({ username: o.username, link: r.invitation });
                      await invitations.reload();
                    })
                  }
                  onDelete={() =>
                    void act.run(async () => {
                      if (
                        !confirm(
                          `Delete ${o.username}? Their sessions and API tokens end at once; this cannot be undone.`,
                        )
                      )
                        return;
                      await api.deleteOperator(o.id);
                      await reloadAll();
                    })
                  }
                />
              ))}
            </tbody>
          </table>
        )}
      </section>

      <section class="card" aria-labelledby="invitations-h">
        <h2 id="invitations-h">Invitations and reset links</h2>
        <ErrorNote error={invitations.error} />
        {invitations.data?.length === 0 && <p class="muted">None.</p>}
        {invitations.data && invitations.data.length > 0 && (
          <table class="stack-sm">
            <thead>
              <tr>
                <th>Kind</th>
                <th>Role</th>
                <th>Apps</th>
                <th>Status</th>
                <th>Expires</th>
                <th>
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {invitations.data.map((i) => (
                <tr key={i.id} data-testid="invitation-row">
                  <td>
                    {i.kind === 'reset' ? `reset for ${i.username ?? 'a removed operator'}` : 'invitation'}
                  </td>
                  <td>{i.role ?? '—'}</td>
                  <td>{i.kind === 'reset' ? '—' : appNames(allApps, i.app_ids)}</td>
                  <td>{i.status}</td>
                  <td>
                    <When at={i.expires_at} />
                  </td>
                  <td>
                    {i.status === 'pending' && (
                      <button
                        type="button"
                        class="danger"
                        onClick={() =>
                          void act.run(async () => {
                            await api.revokeInvitation(i.id);
                            await invitations.reload();
                          })
                        }
                      >
                        Withdraw
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </main>
  );
}

interface RowProps {
  o: Operator;
  apps: App[];
  editing: boolean;
  busy: boolean;
  onEdit: () => void;
  onSave: (patch: { role: Role; app_ids: string[] | null }) => Promise<boolean>;
  onToggle: () => void;
  onReset: () => void;
  onDelete: () => void;
}

function OperatorRow({ o, apps, editing, busy, onEdit, onSave, onToggle, onReset, onDelete }: RowProps) {
  const [role, setRole] = useState<Role>(o.role);
  const [appIds, setAppIds] = useState<string[] | null>(o.app_ids);
  return (
    <>
      <tr data-testid="operator-row" data-username={o.username}>
        <td>
          {o.username}
          {o.sso && <span class="muted"> (SSO)</span>}
        </td>
        <td>{o.role}</td>
        <td>{appNames(apps, o.app_ids)}</td>
        <td>{o.totp_enabled ? 'on' : 'off'}</td>
        <td>{o.disabled ? 'disabled' : 'active'}</td>
        <td>
          <When at={o.last_login_at} />
        </td>
        <td class="row wrap">
          <button type="button" aria-expanded={editing} onClick={onEdit} aria-label={`Edit ${o.username}`}>
            Edit
          </button>
          <button
            type="button"
            onClick={onToggle}
            disabled={busy}
            aria-label={`${o.disabled ? 'Enable' : 'Disable'} ${o.username}`}
          >
            {o.disabled ? 'Enable' : 'Disable'}
          </button>
          <button
            type="button"
            onClick={onReset}
            disabled={busy || o.disabled}
            aria-label={`Reset link for ${o.username}`}
          >
            Reset link
          </button>
          <button
            type="button"
            class="danger"
            onClick={onDelete}
            disabled={busy}
            aria-label={`Delete ${o.username}`}
          >
            Delete
          </button>
        </td>
      </tr>
      {editing && (
        <tr data-testid="operator-editor">
          <td colSpan={7}>
            <form
              class="stack"
              aria-label={`Change ${o.username}`}
              onSubmit={(e) => {
                e.preventDefault();
                void onSave({ role, app_ids: LIMITED.has(role) ? appIds : null });
              }}
            >
              <label>
                Role of {o.username}
                <select
                  name="operator_role"
                  value={role}
                  onChange={(e) => setRole((e.target as HTMLSelectElement).value as Role)}
                >
                  {ROLES.map((r) => (
                    <option key={r} value={r}>
                      {r}
                    </option>
                  ))}
                </select>
              </label>
              {LIMITED.has(role) && (
                <AppChoice apps={apps} value={appIds} onChange={setAppIds} name={`edit-${o.id}`} />
              )}
              <div class="row">
                <button type="submit" class="primary" disabled={busy}>
                  Save
                </button>
                <button type="button" onClick={onEdit}>
                  Cancel
                </button>
              </div>
            </form>
          </td>
        </tr>
      )}
    </>
  );
}
