// The container shell (SVC_ENABLE_SHELL=true): an engine exec with a TTY in the service's running
// container, bridged to a WebSocket the way xterm.js's attach addon expects: binary frames carry
// the terminal both ways, a text frame {"type":"resize","rows","cols"} resizes. Bounded: frames
// over 64 KiB close the socket, a slow reader is cut off, 15 idle minutes (SVC_SHELL_IDLE) close it, and so do
// 8 hours whatever the activity (SVC_SHELL_MAX); at most 4 shells per operator. The runtime closes it through
// the handle when its credential is revoked. Opening and closing are audited with the byte counts.
import type { Duplex } from 'node:stream';
import type Dockerode from 'dockerode';
import type { Services } from '../http/handler.js';
import { HttpError } from '../http/errors.js';
import { getApp } from '../apps/store.js';
import { listAppContainers } from '../docker/containers.js';
import { recordAudit } from '../audit/index.js';
import { guard } from '../docker/engine.js';
import type { Principal } from '../http/handler.js';

export const SHELL_MAX_PER_OPERATOR = 4;
export const SHELL_MAX_FRAME = 64 * 1024;
const MAX_BUFFERED = 4 * 1024 * 1024;
// bash when the image has it, else the POSIX shell every image with a shell has.
const SHELL_CMD = [
  '/bin/sh',
  '-c',
  'if command -v bash >/dev/null 2>&1; then exec bash -l; else exec /bin/sh; fi',
];

const open = new Map<string, number>();

export const SHELL_PATH = /^\/api\/apps\/([^/]+)\/services\/([^/]+)\/shell$/;

/** The socket side, kept minimal so lib/ does not depend on the ws package's types. */
export interface ShellSocket {
  send(data: Buffer, opts: { binary: true }): void;
  close(code: number, reason: string): void;
  readonly bufferedAmount: number;
  readonly readyState: number;
  on(event: 'message', fn: (data: Buffer, isBinary: boolean) => void): void;
  on(event: 'close', fn: () => void): void;
}

export interface ShellTarget {
  appId: string;
  appName: string;
  service: string;
  containerId: string;
}

/** Checks before the upgrade (so refusals are plain HTTP answers): 404 off or unknown, 409 not running. */
export async function prepareShell(
  env: Services,
  principal: Principal,
  appId: string,
  service: string,
): Promise<ShellTarget> {
  if (!env.config.enableShell) throw new HttpError('not_found', 'No such route');
  const app = await getApp(env.db, appId);
  const containers = await listAppContainers(env.engine, app.name, { service });
  if (!containers.length) throw new HttpError('not_found', `No service "${service}" in app "${app.name}"`);
  const running = containers.filter((c) => c.state === 'running').sort((a, b) => b.created - a.created)[0];
  if (!running)
    throw new HttpError('conflict', `Service "${service}" of "${app.name}" is not running: start it first`);
  if ((open.get(principal.user.id) ?? 0) >= SHELL_MAX_PER_OPERATOR)
    throw new HttpError('conflict', `At most ${SHELL_MAX_PER_OPERATOR} shells may be open per operator`);
  return { appId: app.id, appName: app.name, service, containerId: running.id };
}

/** What the runtime keeps of an open shell: a way to end it with a reason (the reason is audited). */
export interface ShellHandle {
  close(code: number, reason: string): void;
}

/** `2 seconds`, `15 minutes`, `8 hours`: for close reasons. */
export function span(seconds: number): string {
  const plural = (n: number, unit: string) => `${n} ${unit}${n === 1 ? '' : 's'}`;
  if (seconds % 3600 === 0) return plural(seconds / 3600, 'hour');
  return seconds % 60 === 0 ? plural(seconds / 60, 'minute') : plural(seconds, 'second');
}

type Finish = (code: number, reason: string) => void;

export function runShell(
  env: Services,
  principal: Principal,
  ip: string,
  target: ShellTarget,
  ws: ShellSocket,
): ShellHandle {
  let finish: Finish = () => {};
  const started = startShell(env, principal, ip, target, ws, (f) => (finish = f));
  started.catch((err) => {
    env.log.error({ err }, 'shell failed');
    finish(1011, 'the shell failed');
  });
  return { close: (code, reason) => finish(code, reason) };
}

/** `expose` hands runShell the way to end this shell as soon as there is one (before the first await). */
async function startShell(
  env: Services,
  principal: Principal,
  ip: string,
  target: ShellTarget,
  ws: ShellSocket,
  expose: (f: Finish) => void,
) {
  const user = principal.user.id;
  open.set(user, (open.get(user) ?? 0) + 1);
  let bytesIn = 0;
  let bytesOut = 0;
  const startedAt = env.now();
  let closed = false;
  let stream: Duplex | null = null;
  let idle: NodeJS.Timeout | null = null;
  let lifetime: NodeJS.Timeout | null = null;
  const audit = (action: string, detail: Record<string, unknown>) =>
    recordAudit(env.db, {
      route: 'GET /api/apps/{id}/services/{name}/shell',
      actorId: user,
      actor: principal.user.username,
      via: principal.kind,
      tokenId: principal.kind === 'token' ? principal.credentialId : null,
      event: action,
      target: target.appId,
      ip,
      outcome: 101,
      detail: { service: target.service, ...detail },
    }).catch((err) => env.log.error({ err }, 'audit write failed'));
  const finish = (code: number, reason: string) => {
    if (closed) return;
    closed = true;
    if (idle) clearTimeout(idle);
    if (lifetime) clearTimeout(lifetime);
    open.set(user, Math.max(0, (open.get(user) ?? 1) - 1));
    // End of input ends the shell (EOF on its TTY).
    stream?.end();
    stream?.destroy();
    if (ws.readyState === 1) ws.close(code, reason);
    void audit('app.shell_closed', {
      bytes_in: bytesIn,
      bytes_out: bytesOut,
      seconds: Math.round((env.now() - startedAt) / 1000),
      reason,
    });
  };
  const touch = () => {
    if (idle) clearTimeout(idle);
    const seconds = env.config.shellIdleSeconds;
    idle = setTimeout(() => finish(1000, `idle for ${span(seconds)}`), seconds * 1000);
    idle.unref();
  };
  expose(finish);
  // A shell kept busy (a `top`, a `tail -f`) never idles out; its life is bounded all the same.
  const maxSeconds = env.config.shellMaxSeconds;
  lifetime = setTimeout(
    () => finish(1000, `open for ${span(maxSeconds)}, the longest a shell may stay open`),
    maxSeconds * 1000,
  );
  lifetime.unref();
  ws.on('close', () => finish(1000, 'client closed'));
  // Frames may arrive before the exec is ready: kept (bounded) and replayed in order.
  const early: Array<[Buffer, boolean]> = [];
  let earlyBytes = 0;
  let onFrame: ((data: Buffer, isBinary: boolean) => void) | null = null;
  ws.on('message', (data, isBinary) => {
    if (onFrame) return onFrame(data, isBinary);
    earlyBytes += data.length;
    if (earlyBytes > MAX_BUFFERED) return finish(1013, 'input before the shell started is too large');
    early.push([data, isBinary]);
  });
  await audit('app.shell_opened', { container: target.containerId.slice(0, 12) });
  let exec: Dockerode.Exec;
  try {
    exec = await guard(env.engine, () =>
      env.engine.docker.getContainer(target.containerId).exec({
        Cmd: SHELL_CMD,
        AttachStdin: true,
        AttachStdout: true,
        AttachStderr: true,
        Tty: true,
        Env: ['TERM=xterm-256color'],
      }),
    );
    stream = (await exec.start({ hijack: true, stdin: true, Tty: true })) as unknown as Duplex;
  } catch (e) {
    finish(1011, `the shell could not start: ${(e as Error).message.split('\n')[0]!.slice(0, 100)}`);
    return;
  }
  if (closed) {
    stream.destroy();
    return;
  }
  touch();
  stream.on('data', (chunk: Buffer) => {
    if (ws.readyState !== 1) return;
    if (ws.bufferedAmount > MAX_BUFFERED) return finish(1013, 'client too slow');
    bytesOut += chunk.length;
    touch();
    ws.send(chunk, { binary: true });
  });
  stream.on('end', () => finish(1000, 'shell exited'));
  stream.on('error', () => finish(1011, 'shell stream failed'));
  // Frames take effect in the order they came: a resize is applied before the input after it
  // reaches the shell (a `stty size` typed right after a resize must see the new size).
  let order: Promise<unknown> = Promise.resolve();
  onFrame = (data, isBinary) => {
    if (closed) return;
    touch();
    if (isBinary) {
      bytesIn += data.length;
      if (stream!.writableLength > MAX_BUFFERED) return finish(1013, 'input faster than the shell reads it');
      order = order.then(() => {
        if (!closed) stream!.write(data);
      });
      return;
    }
    let msg: { type?: unknown; rows?: unknown; cols?: unknown };
    try {
      msg = JSON.parse(data.toString('utf8'));
    } catch {
      return;
    }
    const dim = (v: unknown) =>
      typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= 1000 ? v : null;
    const rows = dim(msg?.rows);
    const cols = dim(msg?.cols);
    if (msg?.type === 'resize' && rows && cols) order = order.then(() => resizeExec(exec, rows, cols));
  };
  for (const [data, isBinary] of early.splice(0)) onFrame(data, isBinary);
}

/** The engine refuses a resize until the exec's process runs, which may be just after start. */
async function resizeExec(exec: Dockerode.Exec, h: number, w: number): Promise<void> {
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      await exec.resize({ h, w });
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** Open shells per operator (tests, metrics). */
export function openShells(userId: string): number {
  return open.get(userId) ?? 0;
}
