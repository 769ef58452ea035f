// What feeds the drains: every line the containers of the wanted apps write (followed from the
// engine, new containers found by a rescan and by the engine's start events), and the lines of
// their deployment logs (the `build:<id>` topic) and run logs (`run:<id>` events naming their app).
// Reading never waits on a drain: a line is handed over and the stream read on.
import type { Readable } from 'node:stream';
import type { Bus, BusEvent } from '../events/bus.js';
import type { Db } from '../db/index.js';
import type { Engine } from '../docker/engine.js';
import type { Logger } from '../log.js';
import { listAppContainers } from '../docker/containers.js';
import { appSwarmServices } from '../cluster/rollout.js';
import { LABEL_SERVICE } from '../docker/names.js';
import { lineSplitter, MAX_LINE, swarmLogLine } from '../docker/log-lines.js';
import type { DrainLine, LineSource } from './kinds/index.js';
import { appIdsByName, appNameOf, deploymentApp } from './store.js';

export interface CollectorDeps {
  db: Db;
  engine: Engine;
  bus: Bus;
  log?: Logger;
  swarm: boolean;
  /** The apps some enabled drain wants (null: every app); empty: none. */
  wanted: () => ReadonlySet<string> | null;
  emit: (l: DrainLine) => void;
  rescanMs?: number;
}

const RESCAN_MS = 5_000;
const APP_CACHE = 1024;

/** `2024-05-01T10:00:00.123456789Z message` -> [epoch ms, message] (docker's `timestamps`). */
export function splitTimestamp(raw: string, fallback: number): [number, string] {
  const sp = raw.indexOf(' ');
  if (sp > 19 && sp < 40 && raw.charCodeAt(4) === 45 /* - */) {
    const at = Date.parse(raw.slice(0, sp));
    if (!Number.isNaN(at)) return [at, raw.slice(sp + 1)];
  }
  return [fallback, raw];
}

const clip = (s: string) => (s.length > MAX_LINE ? `${s.slice(0, MAX_LINE)}…` : s);

export class LogCollector {
  private readonly followed = new Map<string, Readable>();
  /** Last line time per followed source, to resume without a gap when its stream ends. */
  private readonly lastSeen = new Map<string, number>();
  private readonly apps = new Map<string, Promise<{ id: string; name: string } | null>>();
  private timer: NodeJS.Timeout | null = null;
  private scanning = false;
  private stopped = true;
  private off: (() => void) | null = null;

  constructor(private readonly deps: CollectorDeps) {}

  start(): void {
    this.stopped = false;
    this.off = this.deps.bus.onAny((e) => this.onEvent(e));
    void this.scan();
    this.timer = setInterval(() => void this.scan(), this.deps.rescanMs ?? RESCAN_MS);
    this.timer.unref();
  }

  stop(): void {
    this.stopped = true;
    this.off?.();
    if (this.timer) clearInterval(this.timer);
    for (const s of this.followed.values()) s.destroy();
    this.followed.clear();
  }

  /** Looks for containers to follow (and stops following apps no drain wants) now. */
  async scan(): Promise<void> {
    if (this.scanning || this.stopped) return;
    this.scanning = true;
    try {
      const wanted = this.deps.wanted();
      const ids = await appIdsByName(this.deps.db);
      const want = (name: string) => {
        const id = ids.get(name);
        return id !== undefined && (wanted === null || wanted.has(id)) ? id : null;
      };
      this.unfollowUnwanted(want);
      if (wanted !== null && wanted.size === 0) return;
      if (this.deps.swarm) await this.scanSwarm(want);
      else await this.scanContainers(want);
    } catch (err) {
      this.deps.log?.debug({ err: String(err) }, 'log drain scan failed; retried');
    } finally {
      this.scanning = false;
    }
  }

  private unfollowUnwanted(want: (name: string) => string | null): void {
    for (const [key, s] of this.followed) {
      const app = key.slice(0, key.indexOf('\u0000'));
      if (want(app) === null) {
        s.destroy();
        this.followed.delete(key);
      }
    }
  }

  private async scanContainers(want: (name: string) => string | null): Promise<void> {
    const list = await listAppContainers(this.deps.engine, null);
    const present = new Set(list.map((c) => `${c.app}\u0000${c.id}`));
    for (const key of this.lastSeen.keys()) if (!present.has(key)) this.lastSeen.delete(key);
    for (const c of list) {
      const appId = want(c.app);
      const key = `${c.app}\u0000${c.id}`;
      if (!appId || c.state !== 'running' || this.followed.has(key) || this.stopped) continue;
      const h = this.deps.engine.docker.getContainer(c.id);
      const info = await h.inspect();
      const since = this.lastSeen.get(key);
      const raw = (await h.logs({
        follow: true,
        stdout: true,
        stderr: true,
        timestamps: true,
        since: since !== undefined ? Math.floor(since / 1000) : Math.floor(Date.now() / 1000),
      })) as unknown as Readable;
      const base = { appId, app: c.app, service: c.service, container: c.name, source: 'container' as const };
      this.follow(
        key,
        raw,
        (stream) => lineSplitter((l) => this.containerLine(key, base, stream, l)),
        info.Config.Tty,
      );
    }
  }

  private async scanSwarm(want: (name: string) => string | null): Promise<void> {
    const names = new Set<string>();
    for (const name of (await appIdsByName(this.deps.db)).keys()) if (want(name)) names.add(name);
    for (const app of names) {
      const appId = want(app)!;
      for (const svc of await appSwarmServices(this.deps.engine, app)) {
        const key = `${app}\u0000service:${svc.ID}`;
        if (this.followed.has(key) || this.stopped) continue;
        const since = this.lastSeen.get(key) ?? Date.now();
        const raw = (await this.deps.engine.docker.getService(svc.ID).logs({
          follow: true,
          stdout: true,
          stderr: true,
          details: true,
          timestamps: true,
          since: Math.floor(since / 1000),
        } as never)) as unknown as Readable;
        const service = svc.Spec.Labels?.[LABEL_SERVICE] ?? '';
        const base = { appId, app, service, container: '', source: 'container' as const };
        this.follow(key, raw, (stream) => lineSplitter((l) => this.swarmLine(key, base, stream, l)), false);
      }
    }
  }

  private follow(
    key: string,
    raw: Readable,
    sink: (stream: 'stdout' | 'stderr') => NodeJS.WritableStream,
    tty: boolean,
  ): void {
    if (this.stopped) {
      raw.destroy();
      return;
    }
    this.followed.set(key, raw);
    const forget = () => {
      if (this.followed.get(key) === raw) this.followed.delete(key);
    };
    raw.on('end', forget);
    raw.on('close', forget);
    raw.on('error', forget);
    if (tty) raw.pipe(sink('stdout'));
    else this.deps.engine.docker.modem.demuxStream(raw, sink('stdout'), sink('stderr'));
  }

  private containerLine(
    key: string,
    base: Omit<DrainLine, 'at' | 'stream' | 'line'>,
    stream: string,
    raw: string,
  ): void {
    const [at, line] = splitTimestamp(raw, Date.now());
    this.lastSeen.set(key, at);
    this.deps.emit({ ...base, at, stream, line: clip(line) });
  }

  private swarmLine(
    key: string,
    base: Omit<DrainLine, 'at' | 'stream' | 'line'>,
    stream: string,
    raw: string,
  ): void {
    // With details and timestamps a line is `<time> <task attributes> <message>`.
    const [at, rest] = splitTimestamp(raw, Date.now());
    const { task, line } = swarmLogLine(rest);
    this.lastSeen.set(key, at);
    this.deps.emit({ ...base, container: task, at, stream, line: clip(line) });
  }

  private onEvent(e: BusEvent): void {
    const t = e.topic;
    if (t.startsWith('build:'))
      return this.deploymentLine(t.slice(6), e.data as { at?: string; stream?: string; line?: string });
    if (t.startsWith('run:')) return this.runLine(t.slice(4), e.data as RunLineData);
    // A container of an app started: follow it now rather than at the next rescan.
    const d = e.data as { type?: string; action?: string } | null;
    if (t === 'apps' && d?.type === 'container' && d.action === 'start') void this.scan();
  }

  private deploymentLine(deploymentId: string, d: { at?: string; stream?: string; line?: string }): void {
    // A release command's lines reach the drains once, as its run's (`run:<id>`, source `run`).
    if (typeof d?.line !== 'string' || d.stream === 'release') return;
    void this.appOf(`d:${deploymentId}`, () => deploymentApp(this.deps.db, deploymentId)).then((app) => {
      if (!app || !this.isWanted(app.id)) return;
      const at = d.at ? Date.parse(d.at) : Date.now();
      this.deps.emit({
        appId: app.id,
        app: app.name,
        service: '',
        container: `deployment ${deploymentId}`,
        source: 'deployment',
        stream: d.stream ?? 'deploy',
        at,
        line: clip(d.line!),
      });
    });
  }

  private runLine(runId: string, d: RunLineData): void {
    if (typeof d?.line !== 'string' || typeof d.app_id !== 'string') return;
    const appId = d.app_id;
    if (!this.isWanted(appId)) return;
    void this.appOf(`a:${appId}`, async () => {
      const name = await appNameOf(this.deps.db, appId);
      return name ? { id: appId, name } : null;
    }).then((app) => {
      if (!app) return;
      const at = typeof d.at === 'string' ? Date.parse(d.at) : Date.now();
      this.deps.emit({
        appId,
        app: app.name,
        service: d.service ?? '',
        container: `run ${runId}`,
        source: 'run' as LineSource,
        stream: d.stream ?? 'stdout',
        at,
        line: clip(d.line!),
      });
    });
  }

  private isWanted(appId: string): boolean {
    const w = this.deps.wanted();
    return w === null || w.has(appId);
  }

  /** A small cache of what a deployment or an app id names (lines of one arrive together). */
  private appOf(
    key: string,
    load: () => Promise<{ id: string; name: string } | null>,
  ): Promise<{ id: string; name: string } | null> {
    let v = this.apps.get(key);
    if (!v) {
      v = load().catch(() => null);
      if (this.apps.size >= APP_CACHE) this.apps.delete(this.apps.keys().next().value!);
      this.apps.set(key, v);
    }
    return v;
  }
}

/** What a run's log line carries on its `run:<id>` topic (lib/jobs publishes it). */
export interface RunLineData {
  app_id?: string;
  service?: string;
  stream?: string;
  at?: string;
  line?: string;
}
