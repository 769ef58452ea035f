// The health gate a new container must pass before it receives traffic.
//
// 1. A Docker/compose healthcheck when the container has one: wait for "healthy".
// 2. Else, when the service has a health_path: an HTTP GET of it on the service's port
//    (app_services.port, else the first exposed TCP port) must answer below 400.
// 3. Else: running, not restarting, same restart count, for a settle period.
//
// Reaching the container for (2): the control plane never joins an app's network. When it runs
// as a host process it reaches the container's address on the app's bridge directly (the host
// routes to every bridge network). When it runs in a container (svc-control network), bridges
// are isolated from each other, so the probe runs in a short-lived container that joins the new
// container's network namespace (NetworkMode container:<id>) and asks 127.0.0.1, using the
// control plane's own image (it has node). In both layouts the probe sees exactly what a peer
// in the app would see, nothing is shared with the app, and no tool inside the app's image is
// assumed.
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { StackError, guard, type Engine } from '../docker/engine.js';
import { removeContainer, waitForCondition } from '../docker/containers.js';
import { LABEL_ROLE } from '../docker/names.js';
import { ownerLabels } from '../docker/owner.js';
import { sleep } from '../util/sleep.js';

/** `auto`: container mode when this process is itself a container of the engine, else host. */
export type ProbeMode = 'host' | 'container' | 'auto';

export interface GateOptions {
  timeoutMs: number;
  settleMs: number;
  port: number | null;
  healthPath: string | null;
  signal?: AbortSignal;
  probe: ProbeMode;
  /** Image for container-mode probes (must have node); default: the control plane's own. */
  probeImage?: string;
  log: (line: string) => void;
}

export function defaultProbeMode(): ProbeMode {
  return 'auto';
}

let selfImage: Promise<string | null> | undefined;

/**
 * The control plane's own image when it runs as a container of this engine (its hostname is its
 * container id), else null. /.dockerenv alone is not proof: a process in a development container
 * may drive a daemon it is not a container of.
 */
function ownImage(engine: Engine): Promise<string | null> {
  selfImage ??= (async () => {
    if (!existsSync('/.dockerenv')) return null;
    try {
      return (await engine.docker.getContainer(hostname()).inspect()).Config.Image;
    } catch {
      return null;
    }
  })();
  return selfImage;
}

export async function healthGate(
  engine: Engine,
  containerId: string,
  service: string,
  opts: GateOptions,
): Promise<string> {
  const info = await guard(engine, () => engine.docker.getContainer(containerId).inspect());
  const test = info.Config.Healthcheck?.Test;
  if (test && test.length && test[0] !== 'NONE') {
    opts.log(`${service}: waiting for its healthcheck to pass`);
    await waitForCondition(engine, containerId, 'service_healthy', {
      timeoutMs: opts.timeoutMs,
      signal: opts.signal,
      pollMs: 250,
    });
    return 'healthcheck passed';
  }
  if (opts.healthPath) {
    const port = opts.port ?? firstTcpPort(info.Config.ExposedPorts);
    if (!port)
      throw new StackError(
        `${service}: health_path ${opts.healthPath} is set but the service has no port (set one, or EXPOSE it)`,
        service,
      );
    opts.log(`${service}: probing GET ${opts.healthPath} on port ${port}`);
    const image = opts.probe === 'host' ? null : (opts.probeImage ?? (await ownImage(engine)));
    if (opts.probe === 'container' && !image)
      throw new StackError(
        `${service}: no probe image (the control plane is not a container of this engine)`,
        service,
      );
    if (image) await probeFromContainer(engine, containerId, service, port, opts.healthPath, image, opts);
    else await probeFromHost(engine, containerId, service, port, opts.healthPath, opts);
    return `GET ${opts.healthPath} answered`;
  }
  opts.log(
    `${service}: no healthcheck and no health_path: waiting ${Math.round(opts.settleMs / 100) / 10} s for it to stay up`,
  );
  await settle(engine, containerId, service, opts);
  return 'stayed up';
}

function firstTcpPort(exposed: Record<string, unknown> | undefined): number | null {
  for (const k of Object.keys(exposed ?? {}).sort()) {
    const m = /^(\d+)\/tcp$/.exec(k);
    if (m) return Number(m[1]);
  }
  return null;
}

async function assertAlive(
  engine: Engine,
  id: string,
  service: string,
): Promise<import('dockerode').ContainerInspectInfo> {
  const info = await guard(engine, () => engine.docker.getContainer(id).inspect());
  const st = info.State;
  if (st.Status === 'exited' || st.Status === 'dead')
    throw new StackError(
      `${service}: the new container exited with code ${st.ExitCode}${st.Error ? `: ${st.Error}` : ''}`,
      service,
    );
  if (st.Restarting)
    throw new StackError(`${service}: the new container is restarting (crash loop)`, service);
  return info;
}

async function settle(engine: Engine, id: string, service: string, opts: GateOptions): Promise<void> {
  const first = await assertAlive(engine, id, service);
  const end = Date.now() + opts.settleMs;
  while (Date.now() < end) {
    await sleep(Math.min(250, Math.max(10, end - Date.now())), opts.signal);
    const now = await assertAlive(engine, id, service);
    if (now.RestartCount !== first.RestartCount || now.State.StartedAt !== first.State.StartedAt)
      throw new StackError(`${service}: the new container restarted while settling`, service);
  }
}

/** For this long after the gate starts, the health path is asked every 50 ms, then every 250 ms. */
const FAST_PROBE_MS = 3000;

async function probeFromHost(
  engine: Engine,
  id: string,
  service: string,
  port: number,
  path: string,
  opts: GateOptions,
): Promise<void> {
  const t0 = Date.now();
  const deadline = t0 + opts.timeoutMs;
  let last = 'no answer yet';
  for (;;) {
    opts.signal?.throwIfAborted();
    const info = await assertAlive(engine, id, service);
    const ip = Object.values(info.NetworkSettings.Networks ?? {})
      .map((n) => n.IPAddress)
      .find((a) => !!a);
    if (ip) {
      try {
        const res = await fetch(`http://${ip}:${port}${path}`, {
          signal: AbortSignal.any([AbortSignal.timeout(3000), ...(opts.signal ? [opts.signal] : [])]),
          redirect: 'manual',
        });
        await res.body?.cancel().catch(() => {});
        if (res.status < 400) return;
        last = `HTTP ${res.status}`;
      } catch (e) {
        opts.signal?.throwIfAborted();
        last =
          (e as { cause?: { code?: string } }).cause?.code ?? (e instanceof Error ? e.message : String(e));
      }
    } else last = 'the container has no address on its network';
    if (Date.now() > deadline)
      throw new StackError(
        `${service}: GET ${path} on port ${port} did not succeed within ${Math.round(opts.timeoutMs / 1000)} s (last: ${last})`,
        service,
      );
    // Often at first, when most apps come up: every wasted interval delays the switch.
    await sleep(Date.now() - t0 < FAST_PROBE_MS ? 50 : 250, opts.signal);
  }
}

// Runs inside the probe container: retries until an answer below 400 or the deadline.
const PROBE_SCRIPT = `
const [port, path, ms] = process.argv.slice(1);
const end = Date.now() + Number(ms);
let last = 'no answer yet';
(async () => {
  for (;;) {
    try {
      const r = await fetch('http://127.0.0.1:' + port + path, { signal: AbortSignal.timeout(3000), redirect: 'manual' });
      if (r.status < 400) { process.stdout.write('ok'); process.exit(0); }
      last = 'HTTP ' + r.status;
    } catch (e) { last = (e.cause && e.cause.code) || e.message; }
    if (Date.now() > end) { process.stdout.write(last); process.exit(1); }
    await new Promise((r) => setTimeout(r, 250));
  }
})();
`;

async function probeFromContainer(
  engine: Engine,
  id: string,
  service: string,
  port: number,
  path: string,
  image: string,
  opts: GateOptions,
): Promise<void> {
  const probe = await guard(engine, () =>
    engine.docker.createContainer({
      Image: image,
      Entrypoint: ['node', '-e', PROBE_SCRIPT],
      Cmd: [String(port), path, String(opts.timeoutMs)],
      Labels: { ...ownerLabels(engine), [LABEL_ROLE]: 'probe' },
      HostConfig: { NetworkMode: `container:${id}`, AutoRemove: false },
    }),
  );
  const onAbort = () => void removeContainer(engine, probe.id).catch(() => {});
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    await guard(engine, () => probe.start());
    const result = (await guard(engine, () => probe.wait())) as { StatusCode: number };
    opts.signal?.throwIfAborted();
    if (result.StatusCode !== 0) {
      const out = (await guard(engine, () =>
        probe.logs({ stdout: true, stderr: false, follow: false }),
      )) as Buffer;
      const text = out.subarray(8).toString('utf8').slice(0, 200);
      throw new StackError(
        `${service}: GET ${path} on port ${port} did not succeed within ${Math.round(opts.timeoutMs / 1000)} s (last: ${text || 'no answer'})`,
        service,
      );
    }
  } finally {
    opts.signal?.removeEventListener('abort', onAbort);
    await removeContainer(engine, probe.id).catch(() => {});
  }
}
