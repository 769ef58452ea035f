// Adding or changing a job. The command is exec form: one argument per line, run as written
// (no shell: give `sh`, `-c` and the script as three lines for one). The API checks every field
// and each refusal is shown next to its input.
import { useState } from 'preact/hooks';
import * as api from '../../api';
import type { Job, JobFields } from '../../api';
import { ErrorNote, Field, SaveForm, SelectField, fieldErrors, useSaving } from '../../ui';

/** Lines of a textarea as arguments; trailing empty lines are not arguments. */
export function toArgs(text: string): string[] {
  const args = text.split('\n').map((l) => l.replace(/\r$/, ''));
  while (args.length && args.at(-1) === '') args.pop();
  return args;
}

const CONCURRENCY = [
  ['forbid', 'Skip the due time while a run is in flight'],
  ['replace', 'Stop the run in flight and start the new one'],
  ['allow', 'Run both'],
] as const;

export function ArgsField(props: {
  id: string;
  label: string;
  value: string;
  onInput: (v: string) => void;
  error?: string;
  hint: string;
}) {
  return (
    <div class="field">
      <label for={props.id}>{props.label}</label>
      <textarea
        id={props.id}
        class="mono"
        rows={4}
        value={props.value}
        aria-invalid={props.error ? true : undefined}
        aria-describedby={`${props.id}-hint${props.error ? ` ${props.id}-err` : ''}`}
        onInput={(e) => props.onInput((e.target as HTMLTextAreaElement).value)}
      />
      <span id={`${props.id}-hint`} class="muted small">
        {props.hint}
      </span>
      {props.error && (
        <span id={`${props.id}-err`} class="error small" data-testid="field-error">
          {props.error}
        </span>
      )}
    </div>
  );
}

export function JobForm({ id, job, onDone }: { id: string; job: Job | null; onDone: () => Promise<void> }) {
  const [f, setF] = useState({
    name: job?.name ?? '',
    schedule: job?.schedule ?? '0 3 * * *',
    timezone: job?.timezone ?? 'UTC',
    command: (job?.command ?? []).join('\n'),
    service: job?.service ?? '',
    timeout: String(job?.timeout_s ?? 3600),
    concurrency: job?.concurrency ?? 'forbid',
    enabled: job?.enabled ?? true,
  });
  const saving = useSaving();
  const errs = fieldErrors(saving.error, '');
  const set = (k: keyof typeof f) => (v: string | boolean) => {
    saving.changed();
    setF({ ...f, [k]: v });
  };
  const body = (): JobFields => ({
    name: f.name.trim(),
    schedule: f.schedule.trim(),
    timezone: f.timezone.trim(),
    command: toArgs(f.command),
    service: f.service.trim() || null,
    // Anything that is not a whole number goes as is: the API names the problem.
    timeout_s: /^\d+$/.test(f.timeout.trim()) ? Number(f.timeout.trim()) : (f.timeout as unknown as number),
    concurrency: f.concurrency,
    enabled: f.enabled,
  });
  return (
    <div class="stack" role="group" aria-labelledby="jobform-h">
      <h3 id="jobform-h">{job ? `Change ${job.name}` : 'New job'}</h3>
      <SaveForm
        saving={saving}
        label={job ? 'Save job' : 'Add job'}
        onSave={async () => {
          if (job) await api.patchJob(id, job.id, body());
          else await api.createJob(id, body());
          await onDone();
        }}
      >
        <Field
          id="job-name"
          label="Name"
          value={f.name}
          onInput={set('name')}
          error={errs.name}
          hint="lower-case letters, digits and dashes"
        />
        <Field
          id="job-schedule"
          label="Schedule"
          mono
          value={f.schedule}
          onInput={set('schedule')}
          error={errs.schedule}
          hint="5-field cron: minute hour day-of-month month day-of-week (*/5 * * * * is every 5 minutes)"
        />
        <Field
          id="job-tz"
          label="Time zone"
          value={f.timezone}
          onInput={set('timezone')}
          error={errs.timezone}
          hint="UTC, Europe/Paris, America/New_York…"
        />
        <ArgsField
          id="job-command"
          label="Command"
          value={f.command}
          onInput={set('command')}
          error={errs.command}
          hint="One argument per line, run as written (no shell; for one: sh, -c, then the script)"
        />
        <Field
          id="job-service"
          label="Service"
          value={f.service}
          onInput={set('service')}
          error={errs.service}
          hint="Empty: the app's main service"
        />
        <Field
          id="job-timeout"
          label="Timeout (seconds)"
          inputMode="numeric"
          value={f.timeout}
          onInput={set('timeout')}
          error={errs.timeout_s}
        />
        <SelectField
          id="job-concurrency"
          label="While a run is in flight"
          value={f.concurrency}
          options={CONCURRENCY}
          onChange={set('concurrency')}
          error={errs.concurrency}
        />
        <label class="row">
          <input
            type="checkbox"
            checked={f.enabled}
            onChange={(e) => set('enabled')((e.target as HTMLInputElement).checked)}
          />
          Enabled
        </label>
        <ErrorNote error={Object.keys(errs).length ? null : saving.error} />
      </SaveForm>
      <div class="row">
        <button type="button" onClick={() => void onDone()}>
          Close
        </button>
      </div>
    </div>
  );
}
