// Crash detection from the engine's event stream (no polling): a container of an app that dies
// without being told to (no `kill` before its `die`), dies 3 times in 5 minutes (crash loop), or
// is OOM-killed. Each (app, service) episode emits one `app_crashed` on the bus, with the exit
// code, the OOM flag and the last log lines; the episode ends when the service is healthy again
// (a healthy health check, or a start that stays up for a minute).
import type { Bus } from '../events/bus.js';
import type { Db } from '../db/index.js';
import type { Engine } from '../docker/index.js';
import type { Logger } from '../log.js';
import type { ContainerEvent } from '../docker/events.js';
import { previewScope } from './events.js';
import { getAppByName } from './store.js';

export const CRASH_LOOP_RESTARTS = 3;
export const CRASH_LOOP_WINDOW_MS = 5 * 60_000;
export const STABLE_MS = 60_000;
const KILL_MEMORY_MS = 60_000;
const LOG_LINES = 20;
const LOG_LINE_MAX = 300;
const MAX_TRACKED = 2048;
const OOM_CHECKS = 6;
const OOM_CHECK_GAP_MS = 250;

export type CrashState = 'crash_loop' | 'oom';

interface Episode {
  /** Unexpected deaths of the service inside the window. */
  deaths: number[];
  oom: boolean;
  notified: boolean;
  stableTimer: NodeJS.Timeout | null;
}

export interface CrashWatcherDeps {
  db: Db;
  engine: Engine;
  bus: Bus;
  log: Logger;
  now: () => number;
  /** Called when an app's crash state changes, so its status is derived again. */
  onChange?: (appName: string) => void;
  stableMs?: number;
}

// ctx.env of every handler carries it (the service registry of lib/http/handler.ts).
declare module '../http/handler.js' {
  interface Services {
    /** Crash detection from the engine's events; set while the background work runs. */
    crashes?: CrashWatcher;
  }
}

export class CrashWatcher {
  /** Containers told to stop (a `kill` event): their `die` is expected. */
  private readonly killed = new Map<string, number>();
  private readonly ooms = new Set<string>();
  private readonly episodes = new Map<string, Episode>();
  /** `die` events being decided (an OOM notice may come late; then the database and the logs). */
  private readonly deciding = new Set<Promise<void>>();
  private stopped = false;

  constructor(private readonly deps: CrashWatcherDeps) {}

  /** The state an app's status shows (worst of its services), or null. */
  state(appName: string): CrashState | null {
    let out: CrashState | null = null;
    for (const [key, ep] of this.episodes) {
      if (!key.startsWith(`${appName}\u0000`)) continue;
      if (ep.oom) return 'oom';
      if (this.inLoop(ep)) out = 'crash_loop';
    }
    return out;
  }

  private inLoop(ep: Episode): boolean {
    const since = this.deps.now() - CRASH_LOOP_WINDOW_MS;
    return ep.deaths.filter((t) => t >= since).length >= CRASH_LOOP_RESTARTS;
  }

  observe(e: ContainerEvent): void {
    const key = `${e.app}\u0000${e.service}`;
    const now = this.deps.now();
    switch (e.action) {
      case 'kill':
        this.killed.set(e.container_id, now);
        this.trim(this.killed);
        return;
      case 'oom':
        this.ooms.add(e.container_id);
        if (this.ooms.size > MAX_TRACKED) this.ooms.delete(this.ooms.values().next().value!);
        return;
      case 'die': {
        if (this.stopped) return;
        const work = this.onDie(e, key, now).catch((err) =>
          this.deps.log.warn({ err: String(err), container: e.container }, 'crash detection failed'),
        );
        this.deciding.add(work);
        void work.finally(() => this.deciding.delete(work));
        return;
      }
      case 'destroy':
        this.killed.delete(e.container_id);
        this.ooms.delete(e.container_id);
        return;
      case 'start':
      case 'restart':
        this.armStable(key);
        return;
      case 'health_status':
        if (e.status === 'healthy') this.end(key);
        return;
    }
  }

  private async onDie(e: ContainerEvent, key: string, now: number): Promise<void> {
    const killedAt = this.killed.get(e.container_id);
    const asked = killedAt !== undefined && now - killedAt < KILL_MEMORY_MS;
    // Only an OOM kill counts after a kill: everything else after one was asked for.
    let oom = this.ooms.delete(e.container_id);
    if (!oom && e.exit_code === 137) oom = await this.lateOom(e.container_id, asked);
    if (asked && !oom) return;
    let ep = this.episodes.get(key);
    if (!ep) {
      ep = { deaths: [], oom: false, notified: false, stableTimer: null };
      this.episodes.set(key, ep);
      if (this.episodes.size > MAX_TRACKED) this.episodes.delete(this.episodes.keys().next().value!);
    }
    if (ep.stableTimer) clearTimeout(ep.stableTimer);
    ep.stableTimer = null;
    const before = this.state(e.app);
    ep.deaths = ep.deaths
      .filter((t) => t >= now - CRASH_LOOP_WINDOW_MS)
      .concat(now)
      .slice(-16);
    if (oom) ep.oom = true;
    if (this.state(e.app) !== before) this.deps.onChange?.(e.app);
    if (ep.notified) return;
    ep.notified = true;
    const app = await getAppByName(this.deps.db, e.app);
    if (!app) return;
    const lastLogs = await this.lastLogs(e.container_id);
    const exit = e.exit_code ?? null;
    this.deps.bus.publish('apps', {
      type: 'app_crashed',
      app_id: app.id,
      app: app.name,
      service: e.service,
      container: e.container,
      exit_code: exit,
      oom,
      kind: oom ? 'oom' : this.inLoop(ep) ? 'crash_loop' : 'crashed',
      last_logs: lastLogs,
      detail: oom
        ? `${app.name}/${e.service} was killed for running out of memory (exit code ${exit ?? 'unknown'}).`
        : `${app.name}/${e.service} stopped unexpectedly with exit code ${exit ?? 'unknown'}.`,
      at: e.at,
      ...(await previewScope(this.deps.db, app.id).catch(() => ({}))),
    });
  }

  /** A start that stays up for STABLE_MS ends the episode (services without a health check). */
  private armStable(key: string): void {
    const ep = this.episodes.get(key);
    if (!ep) return;
    if (ep.stableTimer) clearTimeout(ep.stableTimer);
    ep.stableTimer = setTimeout(() => this.end(key), this.deps.stableMs ?? STABLE_MS);
    ep.stableTimer.unref();
  }

  private end(key: string): void {
    const ep = this.episodes.get(key);
    if (!ep) return;
    if (ep.stableTimer) clearTimeout(ep.stableTimer);
    this.episodes.delete(key);
    this.deps.onChange?.(key.split('\u0000')[0]!);
  }

  /** Resolves once every `die` seen so far is decided (its app_crashed published, or not). */
  async idle(): Promise<void> {
    while (this.deciding.size) await Promise.all([...this.deciding]);
  }

  /** Stops, after the `die` events being decided: their database reads come before it closes. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.idle();
    for (const ep of this.episodes.values()) if (ep.stableTimer) clearTimeout(ep.stableTimer);
    this.episodes.clear();
  }

  private trim(m: Map<string, number>): void {
    if (m.size > MAX_TRACKED) m.delete(m.keys().next().value!);
  }

  /**
   * The engine can report the exit before it has handled the kernel's OOM notice: the `oom` event
   * and the OOMKilled flag may come a moment after `die`. A SIGKILL exit waits a little for either.
   *
   * On cgroup v1 the engine can also lose the notice altogether (its shim drops it when the
   * container's cgroup is already gone, as happens on a busy host), so a SIGKILL nobody asked for
   * (no `kill` event) of a container under a memory limit counts as an OOM kill too: nothing
   * inside the container can SIGKILL its first process (PID 1 of its namespace), and the kernel's
   * OOM killer is what sends one to a container at its limit. The rare other cases (a `kill -9`
   * sent from the host around the engine, a wrapper passing on its child's exit 137) are taken
   * for one too.
   */
  private async lateOom(id: string, asked: boolean): Promise<boolean> {
    for (let i = 0; i < OOM_CHECKS; i++) {
      const facts = await this.inspectOom(id);
      if (this.ooms.delete(id) || facts.oomKilled) return true;
      if (i === OOM_CHECKS - 1) return !asked && facts.memoryLimited;
      await new Promise((r) => setTimeout(r, OOM_CHECK_GAP_MS));
    }
    return false;
  }

  private async inspectOom(id: string): Promise<{ oomKilled: boolean; memoryLimited: boolean }> {
    try {
      const info = await this.deps.engine.docker.getContainer(id).inspect();
      return { oomKilled: info.State?.OOMKilled === true, memoryLimited: (info.HostConfig?.Memory ?? 0) > 0 };
    } catch {
      return { oomKilled: false, memoryLimited: false };
    }
  }

  /** The container's last lines (both streams), as plain text: app output is data, never markup. */
  private async lastLogs(id: string): Promise<string[]> {
    try {
      const container = this.deps.engine.docker.getContainer(id);
      const info = await container.inspect();
      const raw = (await container.logs({
        stdout: true,
        stderr: true,
        tail: LOG_LINES,
        follow: false,
      })) as unknown as Buffer;
      const text = info.Config?.Tty ? raw.toString('utf8') : demux(raw);
      return text
        .split('\n')
        .map((l) => l.replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, '').slice(0, LOG_LINE_MAX))
        .filter((l) => l.trim())
        .slice(-LOG_LINES);
    } catch (err) {
      this.deps.log.debug?.({ err: String(err) }, 'no logs for a crashed container');
      return [];
    }
  }
}

/** The engine's multiplexed log format: 8-byte frame headers (stream, 0, 0, 0, size BE32). */
function demux(raw: Buffer): string {
  const parts: Buffer[] = [];
  let at = 0;
  while (at + 8 <= raw.length) {
    const size = raw.readUInt32BE(at + 4);
    parts.push(raw.subarray(at + 8, Math.min(raw.length, at + 8 + size)));
    at += 8 + size;
  }
  return Buffer.concat(parts).toString('utf8');
}
