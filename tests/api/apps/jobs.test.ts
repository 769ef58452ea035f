// Jobs, runs and the release command, in-process through the typed client (no engine): a job's
// settings and their checks, what run-now and a one-off command answer before the app ever
// deployed, the release command in the app's settings, and the scheduler driven by a clock the
// test holds: missed due times recorded as skipped with the reason, the overlap policy, a due time
// claimed once however many schedulers tick. Runs in containers: tests/engine/jobs.test.ts.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, typedClient, type TestApp } from '../../_support/request.js';
import { ADMIN, adminClient, type Client } from '../../_support/server.js';
import type { SvcClient } from '../../../client/index.js';
import { JobScheduler } from '#lib/jobs/scheduler.js';
import { describeSchedule, dueTimes } from '#lib/jobs/schedule.js';
import { runRow } from '#lib/jobs/jobs.js';
import { insertRun } from '#lib/jobs/store.js';

let s: TestApp;
let api: SvcClient;
let c: Client;
let n = 0;

before(async () => {
  s = await startTestApp();
  c = await adminClient(s);
  api = await typedClient(s);
});
after(async () => {
  await s?.stop();
});

async function newApp(): Promise<string> {
  const r = await api.POST('/api/apps', {
    body: { name: `jobs-${++n}`, source: { type: 'image', image: 'svc-test/busybox:latest' } },
  });
  assert.equal(r.response.status, 201);
  return r.data!.app.id;
}

const job = (id: string) => ({ params: { path: { id } } });

test('a job is created with its defaults, listed with its schedule in words and its next due time, changed and deleted', async () => {
  const id = await newApp();
  const made = await api.POST('/api/apps/{id}/jobs', {
    ...job(id),
    body: { name: 'nightly', schedule: '30 3 * * *', command: ['sh', '-c', 'echo $GREETING'] },
  });
  assert.equal(made.response.status, 201, JSON.stringify(made.error));
  const j = made.data!.job;
  assert.equal(j.timezone, 'UTC');
  assert.equal(j.timeout_s, 3600);
  assert.equal(j.concurrency, 'forbid');
  assert.equal(j.enabled, true);
  assert.equal(j.service, null);
  assert.equal(j.last_run, null);
  assert.equal(j.schedule_description, 'at 03:30 every day (UTC)');
  assert.match(j.next_run_at!, /T03:30:00\.000Z$/);
  assert.ok(Date.parse(j.next_run_at!) > Date.now());

  const list = await api.GET('/api/apps/{id}/jobs', job(id));
  assert.deepEqual(
    list.data!.items.map((x) => x.name),
    ['nightly'],
  );
  const path = { params: { path: { id, jid: j.id } } };
  const paris = await api.PATCH('/api/apps/{id}/jobs/{jid}', {
    ...path,
    body: { schedule: '*/5 * * * *', timezone: 'Europe/Paris', concurrency: 'replace' },
  });
  assert.equal(paris.response.status, 200);
  assert.equal(paris.data!.job.schedule_description, 'every 5 minutes (Europe/Paris)');
  assert.equal(new Date(paris.data!.job.next_run_at!).getUTCMinutes() % 5, 0);
  const off = await api.PATCH('/api/apps/{id}/jobs/{jid}', { ...path, body: { enabled: false } });
  assert.equal(off.data!.job.next_run_at, null, 'a disabled job has no next due time');

  const twin = await api.POST('/api/apps/{id}/jobs', {
    ...job(id),
    body: { name: 'nightly', schedule: '* * * * *', command: ['true'] },
  });
  assert.equal(twin.response.status, 409);

  const gone = await api.DELETE('/api/apps/{id}/jobs/{jid}', path);
  assert.equal(gone.response.status, 204);
  assert.equal((await api.GET('/api/apps/{id}/jobs/{jid}', path)).response.status, 404);
});

test('a job change is audited with its state: a change and a deletion are reverted', async () => {
  const id = await newApp();
  const made = await api.POST('/api/apps/{id}/jobs', {
    ...job(id),
    body: { name: 'audited', schedule: '0 4 * * *', command: ['true'] },
  });
  const jid = made.data!.job.id;
  await api.PATCH('/api/apps/{id}/jobs/{jid}', {
    params: { path: { id, jid } },
    body: { schedule: '0 5 * * *', command: ['false'] },
  });
  const entry = async (action: string) =>
    (await c.req('GET', `/api/audit?action=${encodeURIComponent(action)}&target=${jid}&limit=1`)).body
      .items[0];
  const changed = await entry('PATCH /api/apps/{id}/jobs/{jid}');
  assert.deepEqual(changed.target, { type: 'job', id: jid });
  assert.equal(changed.revertible, true);
  const back = await c.req('POST', `/api/audit/${changed.id}/revert`, {});
  assert.equal(back.status, 200, back.text);
  let now = (await api.GET('/api/apps/{id}/jobs/{jid}', { params: { path: { id, jid } } })).data!.job;
  assert.equal(now.schedule, '0 4 * * *');
  assert.deepEqual(now.command, ['true']);

  await api.DELETE('/api/apps/{id}/jobs/{jid}', { params: { path: { id, jid } } });
  const deleted = await entry('DELETE /api/apps/{id}/jobs/{jid}');
  const restored = await c.req('POST', `/api/audit/${deleted.id}/revert`, {});
  assert.equal(restored.status, 200, restored.text);
  const list = (await api.GET('/api/apps/{id}/jobs', job(id))).data!.items;
  assert.deepEqual(
    list.map((j) => [j.name, j.schedule, j.command]),
    [['audited', '0 4 * * *', ['true']]],
  );
  now = list[0]!;
  assert.notEqual(now.id, jid, 'created again under a new id');
  await quiet();
});

test('bad job settings are a 400 naming the field, and store nothing', async () => {
  const id = await newApp();
  const bad: Array<[Record<string, unknown>, string]> = [
    [{ schedule: '0 * * * * *' }, 'schedule'],
    [{ schedule: '61 * * * *' }, 'schedule'],
    [{ timezone: 'Mars/Olympus' }, 'timezone'],
    [{ command: [] }, 'command'],
    [{ command: ['sh', 'a\u0000b'] }, 'command'],
    [{ command: 'echo hi' }, 'command'],
    [{ name: 'Has Spaces' }, 'name'],
    [{ timeout_s: 0 }, 'timeout_s'],
    [{ concurrency: 'queue' }, 'concurrency'],
  ];
  for (const [patch, field] of bad) {
    const r = await c.req('POST', `/api/apps/${id}/jobs`, {
      name: 'j',
      schedule: '* * * * *',
      command: ['true'],
      ...patch,
    });
    assert.equal(r.status, 400, `${JSON.stringify(patch)}: ${r.text}`);
    assert.equal(r.body.code, 'bad_request');
    assert.ok(
      JSON.stringify(r.body.details ?? []).includes(field) || r.body.error.includes(field),
      `${field} is named: ${r.text}`,
    );
  }
  assert.deepEqual((await api.GET('/api/apps/{id}/jobs', job(id))).data!.items, []);
});

test('run now and a one-off command answer 409 before the app ever deployed; a command needs a step-up', async () => {
  const id = await newApp();
  const made = await api.POST('/api/apps/{id}/jobs', {
    ...job(id),
    body: { name: 'j', schedule: '* * * * *', command: ['true'] },
  });
  const run = await api.POST('/api/apps/{id}/jobs/{jid}/run', {
    params: { path: { id, jid: made.data!.job.id } },
  });
  assert.equal(run.response.status, 409);
  assert.match(run.error!.error, /never been deployed/);

  const cmd = await api.POST('/api/apps/{id}/runs', { ...job(id), body: { command: ['env'] } });
  assert.equal(cmd.response.status, 403);
  assert.equal(cmd.error!.code, 'step_up_required');
  const up = await c.req('POST', '/api/auth/step-up', { password: ADMIN.password });
  assert.equal(up.status, 200);
  const again = await c.req('POST', `/api/apps/${id}/runs`, { command: ['env'] });
  assert.equal(again.status, 409, again.text);
  assert.deepEqual((await api.GET('/api/apps/{id}/runs', job(id))).data!.items, [], 'nothing was recorded');
  await quiet();
});

/** The scheduler tests below tick every enabled job: the jobs of a test that is done are disabled. */
async function quiet(): Promise<void> {
  await s.env.db.updateTable('jobs').set({ enabled: 0 }).execute();
}

test('the release command is an app setting: set, shown, checked and cleared', async () => {
  const id = await newApp();
  const set = await api.PATCH('/api/apps/{id}', {
    ...job(id),
    body: { release_command: ['./migrate', '--yes'], release_timeout_s: 120 },
  });
  assert.equal(set.response.status, 200);
  assert.deepEqual(set.data!.app.release_command, ['./migrate', '--yes']);
  assert.equal(set.data!.app.release_timeout_s, 120);
  const bad = await c.req('PATCH', `/api/apps/${id}`, { release_command: [''] });
  assert.equal(bad.status, 400, bad.text);
  const cleared = await api.PATCH('/api/apps/{id}', {
    ...job(id),
    body: { release_command: null, release_timeout_s: null },
  });
  assert.equal(cleared.data!.app.release_command, null);
  assert.equal(cleared.data!.app.release_timeout_s, 600, 'the default time limit');
});

/** A scheduler on a clock the test holds (its timer never fires within the test). */
function scheduler(at: { now: number }, opts = {}): JobScheduler {
  return new JobScheduler({ ...s.env, now: () => at.now }, { maxSleepMs: 3_600_000, ...opts });
}

async function runsOf(appId: string, jid: string) {
  const r = await api.GET('/api/apps/{id}/jobs/{jid}/runs', {
    params: { path: { id: appId, jid }, query: { limit: 200 } },
  });
  return r.data!.items;
}

async function minuteJob(appId: string, name: string, created: number, extra: Record<string, unknown> = {}) {
  const r = await api.POST('/api/apps/{id}/jobs', {
    ...job(appId),
    body: { name, schedule: '* * * * *', command: ['true'], ...extra },
  });
  const jid = r.data!.job.id;
  // As if it had been created at `created`.
  await s.env.db
    .updateTable('jobs')
    .set({ created_at: new Date(created).toISOString() })
    .where('id', '=', jid)
    .execute();
  return jid;
}

test('due times missed while the control plane was down are recorded as skipped with the reason; the next one runs', async () => {
  const id = await newApp();
  const t0 = Date.parse('2030-01-01T00:00:30Z');
  const jid = await minuteJob(id, 'every-minute', t0);
  // Down from t0 on; it starts again at 00:03:00.5: 00:01, 00:02 and 00:03 passed while it was down.
  const at = { now: Date.parse('2030-01-01T00:03:00.500Z') };
  const sch = scheduler(at);
  sch.start();
  await sch.stop();
  let runs = await runsOf(id, jid);
  assert.deepEqual(runs.map((r) => [r.scheduled_for, r.status]).reverse(), [
    ['2030-01-01T00:01:00.000Z', 'skipped'],
    ['2030-01-01T00:02:00.000Z', 'skipped'],
    ['2030-01-01T00:03:00.000Z', 'skipped'],
  ]);
  assert.ok(runs.every((r) => r.reason === `the control plane was not running at ${r.scheduled_for}`));
  // Running from then on: 00:04 is due and started; the app never deployed, so it is skipped saying so.
  at.now = Date.parse('2030-01-01T00:04:00.200Z');
  await sch.tick(at.now);
  for (let i = 0; i < 50 && (await runsOf(id, jid))[0]!.status === 'queued'; i++)
    await new Promise((r) => setTimeout(r, 20));
  runs = await runsOf(id, jid);
  assert.equal(runs.length, 4);
  assert.equal(runs[0]!.scheduled_for, '2030-01-01T00:04:00.000Z');
  assert.equal(runs[0]!.status, 'skipped');
  assert.match(runs[0]!.reason!, /never been deployed/);
  // The same instant again, or a second scheduler on the same database: nothing runs twice.
  await sch.tick(at.now);
  await scheduler(at).tick(at.now);
  assert.equal((await runsOf(id, jid)).length, 4);
  await quiet();
});

test('a long downtime folds the older missed due times into one record; a disabled job or one enabled again misses nothing', async () => {
  const id = await newApp();
  const t0 = Date.parse('2030-02-01T00:00:00Z');
  const jid = await minuteJob(id, 'folded', t0);
  const at = { now: t0 + 100 * 60_000 + 500 };
  const sch = scheduler(at);
  sch.start();
  await sch.stop();
  const runs = await runsOf(id, jid);
  assert.equal(runs.length, 61, 'the 60 newest one by one, the rest in one');
  const folded = runs.find((r) => r.scheduled_for === null)!;
  assert.match(
    folded.reason!,
    /^40 due times from 2030-02-01T00:01:00.000Z to 2030-02-01T00:40:00.000Z were missed/,
  );

  const other = await minuteJob(id, 'paused', t0, { enabled: false });
  await scheduler(at).tick(at.now);
  assert.equal((await runsOf(id, other)).length, 0, 'a disabled job has no due times');
  await quiet();
  const since = Date.now();
  await api.PATCH('/api/apps/{id}/jobs/{jid}', {
    params: { path: { id, jid: other } },
    body: { enabled: true },
  });
  await scheduler({ now: Date.now() }).tick(Date.now());
  assert.ok(
    (await runsOf(id, other)).every((r) => Date.parse(r.scheduled_for!) >= since - 1000),
    'enabled again, it counts from now',
  );
  await quiet();
});

test('overlap: with forbid, a due time while a run is in flight is recorded as skipped naming that run', async () => {
  const id = await newApp();
  const t0 = Date.parse('2030-03-01T00:00:10Z');
  const jid = await minuteJob(id, 'forbid', t0);
  const busy = runRow(
    id,
    {
      jobId: jid,
      trigger: 'manual',
      command: ['sleep', '600'],
      service: 'app',
      deploymentId: null,
      timeoutS: 3600,
    },
    t0,
  );
  await insertRun(s.env.db, { ...busy, status: 'running', started_at: new Date(t0).toISOString() });
  const at = { now: Date.parse('2030-03-01T00:01:00.100Z') };
  await scheduler(at).tick(at.now);
  const runs = await runsOf(id, jid);
  const due = runs.find((r) => r.scheduled_for === '2030-03-01T00:01:00.000Z')!;
  assert.equal(due.status, 'skipped');
  assert.equal(due.reason, `run ${busy.id} of this job was still running (concurrency: forbid)`);
  assert.equal(runs.find((r) => r.id === busy.id)!.status, 'running', 'the run in flight is left alone');
  await quiet();
});

test('a run is read with its output and canceled once; an unknown one is a 404', async () => {
  const id = await newApp();
  const row = runRow(
    id,
    {
      jobId: null,
      trigger: 'command',
      command: ['sleep', '9'],
      service: 'app',
      deploymentId: null,
      timeoutS: 60,
    },
    Date.now(),
  );
  await insertRun(s.env.db, row);
  const path = { params: { path: { id, rid: row.id } } };
  const one = await api.GET('/api/apps/{id}/runs/{rid}', path);
  assert.equal(one.response.status, 200);
  assert.deepEqual(one.data!.run.command, ['sleep', '9']);
  assert.equal(one.data!.run.status, 'queued');
  assert.deepEqual((await api.GET('/api/apps/{id}/runs/{rid}/logs', path)).data!.items, []);
  const cancel = await api.POST('/api/apps/{id}/runs/{rid}/cancel', path);
  assert.equal(cancel.response.status, 200);
  assert.equal(cancel.data!.run.status, 'canceled');
  assert.equal(cancel.data!.run.reason, 'canceled by an operator');
  assert.equal((await api.POST('/api/apps/{id}/runs/{rid}/cancel', path)).response.status, 409);
  const other = await newApp();
  const hidden = await api.GET('/api/apps/{id}/runs/{rid}', { params: { path: { id: other, rid: row.id } } });
  assert.equal(hidden.response.status, 404, "another app's run is not found through this one");
  const missing = await api.GET('/api/apps/{id}/runs/{rid}/logs', {
    params: { path: { id, rid: '01aaaaaaaaaaaaaaaaaaaaaaaa' } },
  });
  assert.equal(missing.response.status, 404);
});

test('a due time reached too late by a running scheduler is skipped as late, not run', async () => {
  const id = await newApp();
  const t0 = Date.parse('2030-04-01T00:00:10Z');
  const jid = await minuteJob(id, 'late', t0);
  const at = { now: Date.parse('2030-04-01T00:00:20Z') };
  const sch = scheduler(at, { lateMs: 5_000 });
  sch.start();
  await sch.stop();
  at.now = Date.parse('2030-04-01T00:01:09Z');
  await sch.tick(at.now);
  const [r] = await runsOf(id, jid);
  assert.equal(r!.status, 'skipped');
  assert.equal(r!.reason, 'the scheduler reached it 9 s late (more than 5 s)');
  await quiet();
});

test('schedules in words, and due times across a time zone', () => {
  assert.equal(describeSchedule('* * * * *', 'UTC'), 'every minute (UTC)');
  assert.equal(describeSchedule('0 * * * *', 'UTC'), 'every hour (UTC)');
  assert.equal(describeSchedule('15 */2 * * *', 'UTC'), 'every 2 hours at minute 15 (UTC)');
  assert.equal(
    describeSchedule('0 9 * * 1-5', 'Europe/Paris'),
    'at 09:00 on Monday to Friday (Europe/Paris)',
  );
  assert.equal(describeSchedule('0 0 1 * *', 'UTC'), 'at 00:00 on day 1 of the month (UTC)');
  assert.equal(describeSchedule('0 6,18 * 1 0', 'UTC'), 'at 06:00, 18:00 on Sunday in January (UTC)');
  const paris = dueTimes(
    '0 3 * * *',
    'Europe/Paris',
    Date.parse('2030-06-01T00:00:00Z'),
    Date.parse('2030-06-03T00:00:00Z'),
    10,
  );
  assert.deepEqual(
    paris.times.map((t) => new Date(t).toISOString()),
    ['2030-06-01T01:00:00.000Z', '2030-06-02T01:00:00.000Z'],
  );
});
