// Shared by the cluster edge test and `npm run bench:cluster`: a control plane in cluster mode on a
// test cluster's manager with its Caddy container, and an app whose Swarm service is made here
// directly (name, network and labels as the product names them), served through the proxy.
import { request } from 'node:http';
import type Docker from 'dockerode';
import { unpullable, type TestCluster } from './cluster.js';
import { BASE_IMAGE } from './docker.js';
import { startTestServer, adminClient, type TestServer, type Client } from './server.js';
import { poll } from './wait.js';
import { LABEL_APP, LABEL_NETWORK, networkName, ownerLabels, swarmServiceName } from '#lib/docker/index.js';
import { setUpstreams } from '#lib/proxy/upstreams.js';

export const CADDY_STANDIN = 'svc-test/stack-caddy:2';
export const BASE = 'cluster.test';
export const ADMIN_PORT = 2019;

export interface EdgeLab {
  server: TestServer;
  c: Client;
  adminUrl: string;
}

/** `vars` adds to (and `imageMap` to SVC_IMAGE_MAP of) the control plane's environment. */
export async function startEdgeLab(
  cluster: TestCluster,
  { vars = {}, imageMap = {} }: { vars?: Record<string, string>; imageMap?: Record<string, string> } = {},
): Promise<EdgeLab> {
  await cluster.loadImages([CADDY_STANDIN], [cluster.manager]);
  const adminUrl = `http://${cluster.manager.addr}:${ADMIN_PORT}`;
  const server = await startTestServer(
    {
      SVC_CLUSTER: 'swarm',
      SVC_DOCKER_SOCKET: cluster.manager.socketPath,
      SVC_PROXY: 'on',
      SVC_CADDY_ADMIN: adminUrl,
      SVC_IMAGE_MAP: JSON.stringify({ 'caddy:2': CADDY_STANDIN, ...imageMap }),
      SVC_BASE_DOMAIN: BASE,
      // No host of the test domain points anywhere: nothing goes to a CA, and lookups fail fast.
      SVC_DNS_RESOLVER: '127.0.0.1:1',
      ...vars,
    },
    { edge: { checkIntervalMs: 1000, checkerTickMs: 1000 } },
  );
  return { server, c: await adminClient(server), adminUrl };
}

/** The app's rows through the API: an image app whose service `app` listens on 8080. */
export async function createApp(
  lab: EdgeLab,
  name: string,
): Promise<{ id: string; name: string; host: string }> {
  const r = await lab.c.req('POST', '/api/apps', { name, source: { type: 'image', image: BASE_IMAGE } });
  if (r.status !== 201) throw new Error(`creating the app: ${r.status} ${r.text}`);
  const id = r.body.id ?? r.body.app?.id;
  const p = await lab.c.req('PATCH', `/api/apps/${id}/services/app`, { port: 8080 });
  if (p.status !== 200) throw new Error(`setting the port: ${p.status} ${p.text}`);
  return { id, name, host: `${name}.${BASE}` };
}

/**
 * What the swarm deploy path makes for the app: its overlay network (attachable, owned) and a
 * dnsrr service of `replicas` tasks serving their hostname on 8080; then the proxy sync the
 * deploy pipeline's switch triggers.
 */
export async function createService(
  lab: EdgeLab,
  docker: Docker,
  app: { id: string; name: string },
  opts: { replicas: number; constraints: string[]; healthCheck?: boolean },
): Promise<void> {
  const engine = lab.server.env.engine;
  await docker.createNetwork({
    Name: networkName(app.name),
    Driver: 'overlay',
    Attachable: true,
    Labels: { ...ownerLabels(engine), [LABEL_APP]: app.name, [LABEL_NETWORK]: 'default' },
  });
  await docker.createService({}, serviceSpec(app.name, opts) as any);
  await setUpstreams(lab.server.env.db, app.id, 'app', []);
  await lab.server.env.edge.proxy.sync('deploy');
}

export function serviceSpec(
  app: string,
  opts: { replicas: number; constraints: string[]; healthCheck?: boolean; env?: string[] },
): Record<string, unknown> {
  return {
    Name: swarmServiceName(app, 'app'),
    TaskTemplate: {
      ContainerSpec: {
        Image: unpullable(BASE_IMAGE),
        // The shell stays PID 1 so that a stop is a SIGTERM the task handles at once.
        Command: [
          'sh',
          '-c',
          "trap 'kill $p; exit 0' TERM; mkdir -p /www; hostname > /www/index.html; httpd -f -p 8080 -h /www & p=$!; wait",
        ],
        Env: opts.env ?? [],
        StopGracePeriod: 5e9,
        ...(opts.healthCheck
          ? {
              Healthcheck: {
                Test: ['CMD', 'wget', '-qO-', 'http://127.0.0.1:8080/'],
                Interval: 5e8,
                Timeout: 2e9,
                Retries: 3,
                StartPeriod: 10e9,
              },
            }
          : {}),
      },
      Networks: [{ Target: networkName(app) }],
      Placement: { Constraints: opts.constraints },
      RestartPolicy: { Condition: 'any', Delay: 1e9 },
    },
    Mode: { Replicated: { Replicas: opts.replicas } },
    UpdateConfig: { Parallelism: 1, Order: 'start-first', FailureAction: 'pause', Monitor: 2e9 },
    EndpointSpec: { Mode: 'dnsrr' },
  };
}

/** `service.update` with the whole spec changed by `change`, then waits for the update to finish. */
export async function updateService(
  docker: Docker,
  name: string,
  change: (spec: any) => void,
  timeoutMs = 180_000,
): Promise<void> {
  const svc = docker.getService(name);
  const current = (await svc.inspect()) as any;
  const spec = structuredClone(current.Spec);
  change(spec);
  const templateChanged = JSON.stringify(spec.TaskTemplate) !== JSON.stringify(current.Spec.TaskTemplate);
  // A placement change that every task already satisfies starts no update at all: forced, every
  // change of the template replaces the tasks, which the wait below can then see finish.
  if (templateChanged) spec.TaskTemplate.ForceUpdate = (spec.TaskTemplate.ForceUpdate ?? 0) + 1;
  const startedBefore = current.UpdateStatus?.StartedAt;
  await svc.update({ ...spec, version: current.Version.Index });
  await poll(
    `the update of ${name}`,
    async () => {
      const s = (await svc.inspect()) as any;
      const state = s.UpdateStatus?.State;
      if (state === 'paused' || state === 'rollback_completed')
        throw new Error(`update ${state}: ${s.UpdateStatus?.Message}`);
      if (s.Version.Index === current.Version.Index) return false;
      // A changed task template rolls the tasks over: done once this update says so.
      if (templateChanged && (state !== 'completed' || s.UpdateStatus?.StartedAt === startedBefore))
        return false;
      if (state !== undefined && state !== 'completed') return false;
      return tasksSettled(docker, name, spec.Mode?.Replicated?.Replicas ?? 1);
    },
    timeoutMs,
    250,
  );
}

/** Every wanted task runs (and no task is still being shut down). */
export async function tasksSettled(docker: Docker, name: string, replicas: number): Promise<boolean> {
  const tasks = (await docker.listTasks({ filters: { service: [name] } })) as any[];
  const wanted = tasks.filter((t) => t.DesiredState === 'running');
  const running = wanted.filter((t) => t.Status?.State === 'running');
  const leaving = tasks.filter((t) => t.DesiredState !== 'running' && t.Status?.State === 'running');
  return running.length === replicas && wanted.length === replicas && leaving.length === 0;
}

/** The nodes (by id) the running tasks of a service are on. */
export async function taskNodes(docker: Docker, name: string): Promise<string[]> {
  const tasks = (await docker.listTasks({
    filters: { service: [name], 'desired-state': ['running'] },
  })) as any[];
  return tasks.filter((t) => t.Status?.State === 'running').map((t) => t.NodeID as string);
}

export type Answer = { ok: true; body: string; ms: number } | { ok: false; error: string; ms: number };

/** One GET through the proxy on the manager's port 80, on a connection of its own. */
export function get(addr: string, host: string, timeoutMs = 20_000): Promise<Answer> {
  const start = Date.now();
  return new Promise((resolve) => {
    const req = request(
      { host: addr, port: 80, path: '/', headers: { host }, agent: false, timeout: timeoutMs },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () =>
          resolve(
            res.statusCode === 200
              ? { ok: true, body: body.trim(), ms: Date.now() - start }
              : {
                  ok: false,
                  error: `${res.statusCode} ${body.trim().slice(0, 100)}`,
                  ms: Date.now() - start,
                },
          ),
        );
        res.on('error', (e) => resolve({ ok: false, error: e.message, ms: Date.now() - start }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', (e) => resolve({ ok: false, error: e.message, ms: Date.now() - start }));
    req.end();
  });
}

/** Every request loop not stopped yet (stopLoads ends them all: a test's teardown). */
const loads = new Set<{ stop(): Promise<unknown> }>();

/**
 * Requests in `concurrency` loops until `stop()`; every answer is kept with its time. The figures
 * are what the test and the bench report. A loop nobody stops (a test that failed before its stop)
 * ends by itself after `maxMs`, so it can never keep the process alive.
 */
export function load(addr: string, host: string, concurrency = 4, maxMs = 15 * 60_000) {
  const answers: Array<Answer & { at: number }> = [];
  const until = Date.now() + maxMs;
  let running = true;
  const loops = Array.from({ length: concurrency }, async () => {
    while (running && Date.now() < until) {
      const at = Date.now();
      answers.push({ ...(await get(addr, host)), at });
    }
  });
  const handle = {
    answers,
    async stop() {
      running = false;
      loads.delete(handle);
      await Promise.all(loops);
      return answers;
    },
  };
  loads.add(handle);
  return handle;
}

/** Stops every request loop still running (each ends within one request's timeout). */
export async function stopLoads(): Promise<void> {
  await Promise.all([...loads].map((l) => l.stop()));
}

/** Caddy's running config, read from its admin endpoint. */
export async function caddyConfig(adminUrl: string): Promise<string> {
  const r = await fetch(`${adminUrl}/config/`);
  return r.text();
}
