// The sleep setting (PATCH /api/apps/{id} `sleep_after_minutes`): after that many minutes without a
// request through the proxy the app's containers stop, and the next request wakes it. See
// docs/sleeping-apps.md.
import { useState } from 'preact/hooks';
import * as api from '../../api';
import type { App } from '../../api';
import { ErrorNote, Field, SaveForm, fieldErrors, useSaving } from '../../ui';
import { useCan } from '../../access';

const text = (v: number | null) => (v === null ? '' : String(v));

export function SleepSetting({ app, onSaved }: { app: App; onSaved: (a: App) => void }) {
  const [value, setValue] = useState(() => text(app.sleep_after_minutes));
  const saving = useSaving();
  const can = useCan();
  const errs = fieldErrors(saving.error, '');
  return (
    <section class="card" aria-labelledby="sleep-h">
      <h2 id="sleep-h">Sleep when idle</h2>
      <p class="muted small">
        {app.sleep_after_minutes === null
          ? 'Off: the app runs until it is stopped.'
          : `After ${app.sleep_after_minutes} minute${app.sleep_after_minutes === 1 ? '' : 's'} without a request its containers stop; the next request wakes it and is answered by the app.`}
      </p>
      <SaveForm
        saving={saving}
        allowed={can('app.admin', app.id)}
        label="Save sleep setting"
        onSave={async () => {
          const v = value.trim();
          // Anything that is not a whole number goes to the API as is, which names the problem.
          const minutes = v === '' ? null : /^\d+$/.test(v) ? Number(v) : (v as unknown as number);
          const r = await api.patchApp(app.id, { sleep_after_minutes: minutes });
          setValue(text(r.app.sleep_after_minutes));
          onSaved(r.app);
        }}
      >
        <Field
          id="sleep-after"
          label="Sleep after (minutes)"
          inputMode="numeric"
          value={value}
          hint="1 to 10080 (a week); empty: never sleeps"
          error={errs.sleep_after_minutes}
          onInput={(v) => {
            saving.changed();
            setValue(v);
          }}
        />
        <ErrorNote error={Object.keys(errs).length ? null : saving.error} />
      </SaveForm>
    </section>
  );
}
