// `svc deploy <app> [--ref R] [--follow]`: queues a deployment; following it prints its log as it
// is written and exits with its outcome (0 only when it succeeded), so a CI job can gate on it.
import { setTimeout as sleep } from 'node:timers/promises';
import { command, CliFailure, type Io } from '../parser.js';
import { appId, must, reach, remote, type Remote } from '../remote.js';

const TERMINAL = new Set(['succeeded', 'failed', 'canceled', 'interrupted']);

/** Prints the deployment's log until it ends; answers its final state. */
async function follow(r: Remote, app: string, id: string, io: Io) {
  const path = { id: app, did: id };
  let after: number | undefined;
  for (;;) {
    const dep = must(
      await r.api.GET('/api/apps/{id}/deployments/{did}', { params: { path } }),
      'reading the deployment',
    );
    // Every line written so far, page by page; the state read before them, so none is missed at the end.
    for (;;) {
      const page = must(
        await r.api.GET('/api/apps/{id}/deployments/{did}/logs', {
          params: { path, query: { limit: 1000, ...(after !== undefined ? { after } : {}) } },
        }),
        'reading the log',
      );
      for (const l of page.items) io.out(l.line);
      if (page.items.length) after = page.items[page.items.length - 1]!.seq;
      if (page.items.length < 1000) break;
    }
    if (TERMINAL.has(dep.deployment.status)) return dep.deployment;
    await sleep(1000);
  }
}

export const deployCommand = command({
  name: 'deploy',
  summary:
    "deploy an app now (its branch's head, or --ref); --follow prints the log and exits with the outcome",
  usage: '<app> [--ref REF] [--follow] [--json]',
  args: { min: 1, max: 1, names: 'the app' },
  options: {
    ref: {
      type: 'string',
      value: 'REF',
      description: "a branch or tag to deploy instead of the app's branch",
    },
    follow: {
      type: 'boolean',
      short: 'f',
      description: 'print the log as it is written; exit 0 only when the deployment succeeded',
    },
    json: {
      type: 'boolean',
      description: 'print the deployment as JSON (when it is queued, or when it ended)',
    },
  },
  async run({ args, values, io }) {
    const r = await remote();
    return reach(r.url, async () => {
      const id = await appId(r.api, args[0]!);
      const made = must(
        await r.api.POST('/api/apps/{id}/deployments', {
          params: { path: { id } },
          body: values.ref ? { ref: values.ref } : {},
        }),
        'deploying',
      );
      const dep = made.deployment;
      if (!values.follow) {
        io.out(values.json ? JSON.stringify(dep, null, 2) : `deployment ${dep.id} ${dep.status}`);
        return 0;
      }
      const end = await follow(r, id, dep.id, io);
      if (values.json) io.out(JSON.stringify(end, null, 2));
      if (end.status !== 'succeeded')
        throw new CliFailure(`deployment ${end.id} ${end.status}${end.error ? `: ${end.error}` : ''}`);
      if (!values.json) io.out(`deployment ${end.id} succeeded`);
      return 0;
    });
  },
});
