// "Run a command": a one-off command against the running version (its image, environment and
// network), asked for in a dialog; the API asks for a step-up first, as for the shell. Its output
// follows live on run:<id>, with its status and exit code when it ends.
import { useEffect, useRef, useState } from 'preact/hooks';
import * as api from '../../api';
import type { Run } from '../../api';
import { LogView } from '../../logview';
import { useTopic } from '../../ws';
import { ErrorNote, Field, fieldErrors, useAction } from '../../ui';
import { ArgsField, toArgs } from './jobform';
import { RunStatus, duration } from './runs';

export function CommandDialog({ id }: { id: string }) {
  const ref = useRef<HTMLDialogElement>(null);
  const [open, setOpen] = useState(false);
  const [command, setCommand] = useState('');
  const [service, setService] = useState('');
  const [run, setRun] = useState<Run | null>(null);
  const act = useAction();
  const errs = fieldErrors(act.error, '');
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  useTopic(run ? `run:${run.id}` : null, (d: any) => {
    if (d?.type === 'run' && d.run?.id === run?.id) setRun(d.run as Run);
  });
  const active = run !== null && (run.status === 'queued' || run.status === 'running');
  const start = () =>
    void act.run(async () => {
      const r = await api.runCommand(id, { command: toArgs(command), service: service.trim() || null });
      setRun(r.run);
    });
  return (
    <>
      <button type="button" onClick={() => setOpen(true)}>
        Run a command…
      </button>
      <dialog
        ref={ref}
        class="dialog wide"
        aria-labelledby={`cmd-title-${id}`}
        onCancel={(e) => {
          e.preventDefault();
          setOpen(false);
        }}
      >
        <h2 id={`cmd-title-${id}`}>Run a command</h2>
        <p class="muted small">
          In a new container of the running version: its image, environment (secrets included), network and
          limits. Audited; asks you to confirm who you are.
        </p>
        <form
          class="stack"
          noValidate
          onSubmit={(e) => {
            e.preventDefault();
            start();
          }}
        >
          <ArgsField
            id={`cmd-args-${id}`}
            label="Command"
            value={command}
            onInput={setCommand}
            error={errs.command}
            hint="One argument per line, run as written (no shell; for one: sh, -c, then the script)"
          />
          <Field
            id={`cmd-service-${id}`}
            label="Service"
            value={service}
            onInput={setService}
            error={errs.service}
            hint="Empty: the app's main service"
          />
          <ErrorNote error={Object.keys(errs).length ? null : act.error} />
          <div class="row">
            <button type="submit" class="primary" disabled={act.busy || active}>
              Run
            </button>
            {active && (
              <button type="button" onClick={() => void act.run(() => api.cancelRun(id, run!.id))}>
                Stop
              </button>
            )}
            <button type="button" onClick={() => setOpen(false)}>
              Close
            </button>
          </div>
        </form>
        {run && (
          <div class="stack" data-testid="command-run">
            <p role="status">
              <RunStatus run={run} /> <span class="muted small">{duration(run)}</span>
              {run.exit_code !== null && <span class="mono"> exit code {run.exit_code}</span>}
            </p>
            <LogView topic={`run:${run.id}`} label="Command output" />
          </div>
        )}
      </dialog>
    </>
  );
}
