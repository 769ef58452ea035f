// The Jobs tab: an app's scheduled jobs (schedule in words, next and last run), a form to add or
// change one, run now, and a job's history (status, duration, exit code, output). "Run a command"
// opens the one-off command dialog. Runs update live through the `jobs` topic. See docs/jobs.md.
import { useState } from 'preact/hooks';
import * as api from '../../api';
import type { Job, Run } from '../../api';
import { LogView } from '../../logview';
import { useTopic } from '../../ws';
import { ErrorNote, When, useAction, useLoad } from '../../ui';
import { CommandDialog } from './command';
import { JobForm } from './jobform';
import { RunStatus, duration } from './runs';
import { useCan } from '../../access';

export function JobsTab({ id }: { id: string }) {
  const jobs = useLoad(() => api.listJobs(id).then((r) => r.items), [id]);
  const [editing, setEditing] = useState<Job | 'new' | null>(null);
  const [history, setHistory] = useState<string | null>(null);
  const act = useAction();
  // Viewers read jobs and their history; changing and running them is the deployer's (app.deploy).
  const deploy = useCan()('app.deploy', id);
  useTopic('jobs', (d: any) => {
    if (d?.type === 'run' && d.app_id === id && d.job_id) void jobs.reload();
  });
  const shown = jobs.data?.find((j) => j.id === history) ?? null;
  return (
    <>
      <section class="card" aria-labelledby="jobs-h">
        <div class="row spread">
          <h2 id="jobs-h">Jobs</h2>
          {deploy && (
            <div class="row">
              <button type="button" class="primary" onClick={() => setEditing('new')}>
                New job
              </button>
              <CommandDialog id={id} />
            </div>
          )}
        </div>
        <ErrorNote error={jobs.error ?? act.error} />
        {jobs.data?.length === 0 && (
          <p class="muted">
            No jobs. A job runs a command on a schedule in a one-off container of the live version.
          </p>
        )}
        {jobs.data && jobs.data.length > 0 && (
          <JobTable
            id={id}
            jobs={jobs.data}
            act={act}
            deploy={deploy}
            onEdit={setEditing}
            onHistory={setHistory}
            onChanged={jobs.reload}
          />
        )}
        {editing && (
          <JobForm
            id={id}
            job={editing === 'new' ? null : editing}
            onDone={async () => {
              setEditing(null);
              await jobs.reload();
            }}
          />
        )}
      </section>
      {shown && <RunHistory id={id} job={shown} />}
    </>
  );
}

function JobTable(props: {
  id: string;
  jobs: Job[];
  act: ReturnType<typeof useAction>;
  /** Offers run now, edit and delete. */
  deploy: boolean;
  onEdit: (j: Job) => void;
  onHistory: (jid: string) => void;
  onChanged: () => Promise<void>;
}) {
  const { id, act } = props;
  return (
    <table>
      <thead>
        <tr>
          <th>Name</th>
          <th>Schedule</th>
          <th>Next run</th>
          <th>Last run</th>
          <th>
            <span class="sr-only">Actions</span>
          </th>
        </tr>
      </thead>
      <tbody>
        {props.jobs.map((j) => (
          <tr key={j.id} data-testid="job-row">
            <td>
              <strong>{j.name}</strong>
              <div class="mono small muted">{j.command.join(' ')}</div>
            </td>
            <td>
              {j.schedule_description}
              <div class="mono small muted">{j.schedule}</div>
            </td>
            <td>{j.enabled ? <When at={j.next_run_at} /> : <span class="muted">paused</span>}</td>
            <td>{j.last_run ? <RunStatus run={j.last_run} /> : <span class="muted">never</span>}</td>
            <td class="row">
              {props.deploy && (
                <button
                  type="button"
                  onClick={() =>
                    void act.run(async () => {
                      await api.runJob(id, j.id);
                      props.onHistory(j.id);
                      await props.onChanged();
                    })
                  }
                >
                  Run now
                </button>
              )}
              <button type="button" onClick={() => props.onHistory(j.id)}>
                History
              </button>
              {props.deploy && (
                <>
                  <button type="button" onClick={() => props.onEdit(j)}>
                    Edit
                  </button>
                  <button
                    type="button"
                    class="danger"
                    onClick={() => {
                      if (!confirm(`Delete the job ${j.name} and its history?`)) return;
                      void act.run(async () => {
                        await api.deleteJob(id, j.id);
                        await props.onChanged();
                      });
                    }}
                  >
                    Delete
                  </button>
                </>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** A job's runs, newest first, live; one run's output below. */
function RunHistory({ id, job }: { id: string; job: Job }) {
  const runs = useLoad(() => api.jobRuns(id, job.id).then((r) => r.items), [id, job.id]);
  const [open, setOpen] = useState<string | null>(null);
  const act = useAction();
  const deploy = useCan()('app.deploy', id);
  useTopic('jobs', (d: any) => {
    if (d?.type !== 'run' || d.job_id !== job.id || !runs.data) return;
    const r = d.run as Run;
    const list = runs.data;
    runs.set(list.some((x) => x.id === r.id) ? list.map((x) => (x.id === r.id ? r : x)) : [r, ...list]);
  });
  return (
    <section class="card" aria-labelledby="runs-h">
      <h2 id="runs-h">Runs of {job.name}</h2>
      <ErrorNote error={runs.error ?? act.error} />
      {runs.data?.length === 0 && <p class="muted">No runs yet.</p>}
      {runs.data && runs.data.length > 0 && (
        <table>
          <thead>
            <tr>
              <th>Due / started</th>
              <th>Status</th>
              <th>Trigger</th>
              <th>Duration</th>
              <th>
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {runs.data.map((r) => (
              <tr key={r.id} class={r.id === open ? 'selected' : undefined} data-testid="run-row">
                <td>
                  <When at={r.scheduled_for ?? r.started_at ?? r.created_at} />
                </td>
                <td>
                  <RunStatus run={r} />
                </td>
                <td>{r.trigger}</td>
                <td>{duration(r)}</td>
                <td class="row">
                  {r.status !== 'skipped' && (
                    <button type="button" aria-pressed={r.id === open} onClick={() => setOpen(r.id)}>
                      Output
                    </button>
                  )}
                  {deploy && (r.status === 'queued' || r.status === 'running') && (
                    <button type="button" onClick={() => void act.run(() => api.cancelRun(id, r.id))}>
                      Cancel
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {open && (
        <>
          <h3>Output</h3>
          <LogView topic={`run:${open}`} label="Run output" />
        </>
      )}
    </section>
  );
}
