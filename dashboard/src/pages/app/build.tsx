// How a git app is built (source.build) and how far a build may go (build_limits), each saved with
// PATCH /api/apps/{id}; a refused value is shown next to its field with the API's own words. The
// preview asks GET /build-plan for a ref with the saved settings. See docs/builds.md.
import { useState } from 'preact/hooks';
import * as api from '../../api';
import type { App, AppSource, BuildLimits, BuildPlan, BuildSetting } from '../../api';
import { ErrorNote, Field, SaveForm, SelectField, fieldErrors, useSaving } from '../../ui';
import { useCan } from '../../access';
import { PlanView, STACKS, loadPlan, type PlanResult } from './plan';

type GitSource = Extract<AppSource, { type: 'git' }>;
type Kind = '' | BuildSetting['type'];

const KINDS: ReadonlyArray<readonly [Kind, string]> = [
  ['', 'Default: compose file, else Dockerfile, else detected'],
  ['auto', 'auto: detect the stack and generate a Dockerfile'],
  ['dockerfile', "dockerfile: the repository's Dockerfile"],
  ['compose', "compose: the repository's compose file"],
  ['stack', 'stack: a generated Dockerfile for a stack I choose'],
];

const OVERRIDES = ['version', 'install', 'build', 'start', 'port', 'publish_dir'] as const;
type Form = { kind: Kind; path: string; stack: BuildPlan['stack'] } & Record<
  (typeof OVERRIDES)[number],
  string
>;

function formOf(src: GitSource): Form {
  const b = src.build;
  const f: Form = {
    kind: b?.type ?? (src.compose_path ? 'compose' : ''),
    path: '',
    stack: 'node',
    version: '',
    install: '',
    build: '',
    start: '',
    port: '',
    publish_dir: '',
  };
  if (b?.type === 'dockerfile') f.path = b.path ?? '';
  if (b?.type === 'compose' || (!b && src.compose_path))
    f.path = (b?.type === 'compose' ? b.path : undefined) ?? src.compose_path ?? '';
  if (b?.type === 'stack') {
    f.stack = b.stack;
    for (const k of OVERRIDES) f[k] = b[k] === undefined ? '' : String(b[k]);
  }
  return f;
}

/**
 * A number typed in a text field: sent as a number when it is one, else as typed, so the API's
 * answer (not a guess here) says what is wrong with it.
 */
const num = (v: string): number | undefined => {
  const t = v.trim();
  if (!t) return undefined;
  return (Number.isFinite(Number(t)) ? Number(t) : t) as number;
};

function sourceOf(src: GitSource, f: Form): GitSource {
  // compose_path and build.path are one setting: the form writes it as build.path only.
  const { compose_path: _compose, build: _build, ...rest } = src;
  if (f.kind === '') return src.compose_path ? { ...rest, compose_path: src.compose_path } : rest;
  const path = f.path.trim() || undefined;
  let build: BuildSetting;
  if (f.kind === 'auto') build = { type: 'auto' };
  else if (f.kind === 'dockerfile' || f.kind === 'compose')
    build = { type: f.kind, ...(path ? { path } : {}) };
  else {
    const o: Record<string, string | number> = {};
    for (const k of OVERRIDES) {
      const v = k === 'port' ? num(f.port) : f[k].trim() || undefined;
      if (v !== undefined) o[k] = v;
    }
    build = { type: 'stack', stack: f.stack, ...o };
  }
  return { ...rest, build };
}

export function BuildTab({ app, onSaved }: { app: App; onSaved: (a: App) => void }) {
  const [dirty, setDirty] = useState(false);
  if (app.source.type !== 'git')
    return (
      <section class="card" aria-labelledby="build-h">
        <h2 id="build-h">Build settings</h2>
        <p class="muted">
          This app runs {app.source.type === 'image' ? 'an image' : 'an inline compose file'}: nothing is
          built from source.
        </p>
      </section>
    );
  const src = app.source;
  return (
    <>
      <BuildSettings app={app} src={src} onSaved={onSaved} onDirty={setDirty} />
      <Limits app={app} onSaved={onSaved} />
      <Preview id={app.id} branch={src.branch} dirty={dirty} />
    </>
  );
}

function BuildSettings({
  app,
  src,
  onSaved,
  onDirty,
}: {
  app: App;
  src: GitSource;
  onSaved: (a: App) => void;
  onDirty: (d: boolean) => void;
}) {
  const [form, setForm] = useState<Form>(() => formOf(src));
  const saving = useSaving();
  const can = useCan();
  const errs = fieldErrors(saving.error, 'source.build.');
  // The conflict between a compose path and another build type is named on compose_path.
  const pathErr =
    [errs.path, fieldErrors(saving.error, 'source.').compose_path].filter(Boolean).join('; ') || undefined;
  const set = (patch: Partial<Form>) => {
    const next = { ...form, ...patch };
    setForm(next);
    saving.changed();
    onDirty(JSON.stringify(sourceOf(src, next)) !== JSON.stringify(sourceOf(src, formOf(src))));
  };
  const fieldsMarked = Object.keys(errs).length > 0 || !!pathErr;
  return (
    <section class="card" aria-labelledby="build-h">
      <h2 id="build-h">Build settings</h2>
      <SaveForm
        saving={saving}
        allowed={can('app.admin', app.id)}
        label="Save build settings"
        onSave={async () => {
          const r = await api.patchApp(app.id, { source: sourceOf(src, form) });
          // The form shows what was stored, as a reload would.
          if (r.app.source.type === 'git') setForm(formOf(r.app.source));
          onDirty(false);
          onSaved(r.app);
        }}
      >
        <SelectField
          id="build-kind"
          label="Build type"
          value={form.kind}
          options={KINDS}
          hint="The next deploy builds this way."
          onChange={(kind) => set({ kind })}
        />
        {(form.kind === 'dockerfile' || form.kind === 'compose') && (
          <Field
            id="build-path"
            label={form.kind === 'dockerfile' ? 'Dockerfile path' : 'Compose file path'}
            mono
            value={form.path}
            placeholder={form.kind === 'dockerfile' ? 'Dockerfile' : 'compose.yaml'}
            hint="Relative to the repository root; empty: the default name."
            error={pathErr}
            onInput={(path) => set({ path })}
          />
        )}
        {form.kind === 'stack' && (
          <>
            <SelectField
              id="build-stack"
              label="Stack"
              value={form.stack}
              options={STACKS.map((s) => [s, s] as const)}
              error={errs.stack}
              onChange={(stack) => set({ stack })}
            />
            <p class="muted small">Each field left empty is what detection would choose.</p>
            <div class="fields">
              <Field
                id="build-version"
                label="Version"
                mono
                value={form.version}
                placeholder="e.g. 22"
                error={errs.version}
                onInput={(version) => set({ version })}
              />
              <Field
                id="build-port"
                label="Port"
                value={form.port}
                inputMode="numeric"
                placeholder="e.g. 8080"
                hint="1..65535"
                error={errs.port}
                onInput={(port) => set({ port })}
              />
              <Field
                id="build-install"
                label="Install command"
                mono
                value={form.install}
                placeholder="e.g. npm ci"
                error={errs.install}
                onInput={(install) => set({ install })}
              />
              <Field
                id="build-build"
                label="Build command"
                mono
                value={form.build}
                placeholder="e.g. npm run build"
                error={errs.build}
                onInput={(build) => set({ build })}
              />
              <Field
                id="build-start"
                label="Start command"
                mono
                value={form.start}
                placeholder="e.g. node server.js"
                error={errs.start}
                onInput={(start) => set({ start })}
              />
              <Field
                id="build-publish_dir"
                label="Publish directory"
                mono
                value={form.publish_dir}
                placeholder="e.g. dist"
                hint="Static output, relative to the repository."
                error={errs.publish_dir}
                onInput={(publish_dir) => set({ publish_dir })}
              />
            </div>
          </>
        )}
        {fieldsMarked ? (
          <p class="error" role="alert">
            Not saved: {saving.error instanceof api.ApiError ? saving.error.message : 'a value is refused'}
          </p>
        ) : (
          <ErrorNote error={saving.error} />
        )}
      </SaveForm>
    </section>
  );
}

const LIMITS = [
  { key: 'memory_mb', label: 'Memory (MB)', hint: '64..65536', mode: 'numeric' },
  { key: 'cpus', label: 'CPUs', hint: '0.1..64 (1.5: one and a half cores)', mode: 'decimal' },
  { key: 'timeout_s', label: 'Time limit (s)', hint: '10..7200', mode: 'numeric' },
] as const;
type LimitKey = (typeof LIMITS)[number]['key'];

function limitsForm(l: BuildLimits | null): Record<LimitKey, string> {
  const s = (v: number | undefined) => (v === undefined ? '' : String(v));
  return { memory_mb: s(l?.memory_mb), cpus: s(l?.cpus), timeout_s: s(l?.timeout_s) };
}

function Limits({ app, onSaved }: { app: App; onSaved: (a: App) => void }) {
  const [form, setForm] = useState(() => limitsForm(app.build_limits));
  const saving = useSaving();
  const can = useCan();
  const errs = fieldErrors(saving.error, 'build_limits.');
  return (
    <section class="card" aria-labelledby="limits-h">
      <h2 id="limits-h">Build limits</h2>
      <p class="muted small">
        Bounds of every image build of this app; an empty field is unbounded. A build over a limit fails the
        deployment, and the running version keeps serving.
      </p>
      <SaveForm
        saving={saving}
        allowed={can('app.admin', app.id)}
        label="Save build limits"
        onSave={async () => {
          const limits: Record<string, number> = {};
          for (const { key } of LIMITS) {
            const v = num(form[key]);
            if (v !== undefined) limits[key] = v;
          }
          const r = await api.patchApp(app.id, {
            build_limits: Object.keys(limits).length ? (limits as BuildLimits) : null,
          });
          setForm(limitsForm(r.app.build_limits));
          onSaved(r.app);
        }}
      >
        <div class="fields">
          {LIMITS.map((l) => (
            <Field
              key={l.key}
              id={`limit-${l.key}`}
              label={l.label}
              inputMode={l.mode}
              value={form[l.key]}
              hint={l.hint}
              error={errs[l.key]}
              onInput={(v) => {
                saving.changed();
                setForm({ ...form, [l.key]: v });
              }}
            />
          ))}
        </div>
        {Object.keys(errs).length > 0 ? (
          <p class="error" role="alert">
            Not saved: {(saving.error as api.ApiError).message}
          </p>
        ) : (
          <ErrorNote error={saving.error} />
        )}
      </SaveForm>
    </section>
  );
}

function Preview({ id, branch, dirty }: { id: string; branch: string; dirty: boolean }) {
  const [ref, setRef] = useState('');
  const [result, setResult] = useState<PlanResult | null>(null);
  const [busy, setBusy] = useState(false);
  return (
    <section class="card" aria-labelledby="preview-h">
      <h2 id="preview-h">Build plan</h2>
      <p class="muted small">
        What a deploy would build from source, read from a fresh clone of the ref with the saved settings.
      </p>
      <form
        class="row wrap"
        onSubmit={(e) => {
          e.preventDefault();
          setBusy(true);
          void loadPlan(id, ref.trim() || undefined).then((r) => {
            setResult(r);
            setBusy(false);
          });
        }}
      >
        <label>
          Branch or tag
          <input
            name="ref"
            class="mono"
            value={ref}
            placeholder={branch}
            onInput={(e) => setRef((e.target as HTMLInputElement).value)}
          />
        </label>
        <button type="submit" disabled={busy}>
          Preview plan
        </button>
      </form>
      {dirty && (
        <p class="warning small" role="status">
          The build settings have unsaved changes: the preview uses the saved ones.
        </p>
      )}
      {busy && (
        <p class="muted" role="status">
          Reading the repository…
        </p>
      )}
      {result && !busy && <PlanView result={result} />}
    </section>
  );
}
