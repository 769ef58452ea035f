// `svc jobs <app>` lists the app's scheduled jobs; `svc run <app> -- <cmd...>` runs a one-off
// command in a new container of the app's current deployment, prints its output as it comes and
// exits with the command's exit status.
import { setTimeout as sleep } from 'node:timers/promises';
import { command, CliFailure, UsageError, type Io } from '../parser.js';
import { appId, must, reach, remote, type Remote } from '../remote.js';
import { printTable } from '../print.js';

export const jobsCommand = command({
  name: 'jobs',
  summary: "list an app's scheduled jobs: schedule in words, next run, last outcome",
  usage: '<app> [--json]',
  args: { min: 1, max: 1, names: 'the app' },
  options: { json: { type: 'boolean', description: 'print JSON instead of a table' } },
  async run({ args, values, io }) {
    const r = await remote();
    return reach(r.url, async () => {
      const id = await appId(r.api, args[0]!);
      const jobs = must(await r.api.GET('/api/apps/{id}/jobs', { params: { path: { id } } }), 'listing jobs');
      if (values.json) return io.out(JSON.stringify(jobs.items, null, 2));
      printTable(
        io,
        ['NAME', 'SCHEDULE', 'NEXT', 'LAST'],
        jobs.items.map((j) => [
          j.name,
          j.schedule_description,
          j.enabled ? (j.next_run_at ?? '-') : 'disabled',
          j.last_run
            ? `${j.last_run.status}${j.last_run.exit_code !== null ? ` (${j.last_run.exit_code})` : ''}`
            : '-',
        ]),
      );
    });
  },
});

/** Prints the run's output until it ends; answers its final state. */
async function followRun(r: Remote, app: string, rid: string, io: Io) {
  const path = { id: app, rid };
  let after: number | undefined;
  for (;;) {
    const run = must(
      await r.api.GET('/api/apps/{id}/runs/{rid}', { params: { path } }),
      'reading the run',
    ).run;
    for (;;) {
      const page = must(
        await r.api.GET('/api/apps/{id}/runs/{rid}/logs', {
          params: { path, query: { limit: 1000, ...(after !== undefined ? { after } : {}) } },
        }),
        'reading the output',
      );
      for (const l of page.items) (l.stream === 'stdout' ? io.out : io.err)(l.line);
      if (page.items.length) after = page.items[page.items.length - 1]!.seq;
      if (page.items.length < 1000) break;
    }
    if (run.status !== 'queued' && run.status !== 'running') return run;
    await sleep(500);
  }
}

export const runCommandCommand = command({
  name: 'run',
  summary: "run a one-off command in the app's current image; exits with the command's status",
  usage: '<app> [--service NAME] -- <command...>',
  args: { min: 1, max: 1, names: 'the app' },
  passthrough: true,
  options: {
    service: {
      type: 'string',
      value: 'NAME',
      description: "the service whose image runs it (default: the app's main one)",
    },
  },
  details: 'Needs a token made by a stepped-up session (running a command is a step-up effect).',
  async run({ args, rest, values, io }) {
    if (!rest.length) throw new UsageError('the command is missing: svc run <app> -- <command...>');
    const r = await remote();
    return reach(r.url, async () => {
      const id = await appId(r.api, args[0]!);
      const made = must(
        await r.api.POST('/api/apps/{id}/runs', {
          params: { path: { id } },
          body: { command: rest, ...(values.service ? { service: values.service } : {}) },
        }),
        'running',
      );
      const end = await followRun(r, id, made.run.id, io);
      if (end.exit_code !== null) return end.exit_code;
      throw new CliFailure(`run ${end.id} ${end.status}${end.reason ? `: ${end.reason}` : ''}`);
    });
  },
});
