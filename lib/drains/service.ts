// The log drains at work: one pipe per enabled drain (./pipe.ts), the collector feeding them
// (./collector.ts), and the counters written to the drains' rows every few seconds. A change to
// a drain (the API) reloads the pipes: an unchanged drain keeps its pipe and what waits in it; a
// changed one starts afresh (what waited for the old address is not sent to the new one).
import type { Db } from '../db/index.js';
import type { Sealer } from '../crypto/seal.js';
import type { Bus } from '../events/bus.js';
import type { Engine } from '../docker/engine.js';
import type { Logger } from '../log.js';
import type { OutboundOptions } from '../net/outbound.js';
import { DRAIN_KIND_TABLE, type BatchResult, type DrainLine } from './kinds/index.js';
import { DrainPipe, type PipeState } from './pipe.js';
import { LogCollector } from './collector.js';
import { addDrainCounts, drainSecrets, getDrainRow, listDrainRows, type DrainRow } from './store.js';

export const DRAIN_BUFFER_BYTES = 16 * 1024 * 1024;
const SAVE_MS = 5_000;

export interface LogDrainsDeps {
  db: Db;
  sealer: Sealer;
  bus: Bus;
  engine: Engine;
  log?: Logger;
  now: () => number;
  swarm: boolean;
  bufferLines: number;
  bufferBytes?: number;
  /** The guard's settings (SVC_NOTIFY_ALLOW); tests add their resolver and CA. */
  transport: OutboundOptions;
}

/** A drain as the API shows it: the row, with what is waiting and how delivery goes now. */
export interface DrainView extends DrainRow {
  buffered: number;
  state: PipeState | 'disabled';
}

// ctx.env of every handler carries it (the service registry of lib/http/handler.ts).
declare module '../http/handler.js' {
  interface Services {
    /** Log drains: app, deployment and run log lines to syslog, OTLP or HTTP receivers. */
    drains: LogDrains;
  }
}

export class LogDrains {
  /** The guard's settings, shared by every drain (tests add their resolver and CA here). */
  readonly transport: OutboundOptions;
  /** Tests shorten the pipes' waits. */
  pipeTimings: { backoffMs?: number[]; lingerMs?: number } = {};
  private pipes = new Map<string, DrainPipe>();
  /** The row version each pipe was made from. */
  private readonly versions = new Map<string, string>();
  private byApp: { all: DrainPipe[]; apps: Map<string, DrainPipe[]> } = { all: [], apps: new Map() };
  private wanted: ReadonlySet<string> | null = new Set();
  private readonly collector: LogCollector;
  private timer: NodeJS.Timeout | null = null;
  private reloading: Promise<void> = Promise.resolve();

  constructor(private readonly deps: LogDrainsDeps) {
    this.transport = { ...deps.transport };
    this.collector = new LogCollector({
      db: deps.db,
      engine: deps.engine,
      bus: deps.bus,
      log: deps.log,
      swarm: deps.swarm,
      wanted: () => this.wanted,
      emit: (l) => this.offer(l),
    });
  }

  /** One line for every drain that wants its app (never waits). Also the entry for other feeds. */
  offer(l: DrainLine): void {
    for (const p of this.byApp.all) p.offer(l);
    const some = this.byApp.apps.get(l.appId);
    if (some) for (const p of some) p.offer(l);
  }

  async start(): Promise<void> {
    await this.reload();
    this.collector.start();
    this.timer = setInterval(() => void this.save(), SAVE_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.collector.stop();
    await this.reloading;
    await Promise.all([...this.pipes.values()].map((p) => p.close()));
    await this.save();
    this.pipes.clear();
  }

  /** Reads the drains again (after a change through the API). */
  reload(): Promise<void> {
    this.reloading = this.reloading
      .then(() => this.reloadNow())
      .catch((err) => this.deps.log?.warn({ err: String(err) }, 'log drains reload failed'));
    return this.reloading;
  }

  private async reloadNow(): Promise<void> {
    const rows = (await listDrainRows(this.deps.db)).filter((d) => d.enabled);
    const next = new Map<string, DrainPipe>();
    for (const d of rows) {
      const kept = this.pipes.get(d.id);
      if (kept && this.versions.get(d.id) === d.updated_at) {
        next.set(d.id, kept);
        continue;
      }
      const secrets = await drainSecrets(this.deps.db, this.deps.sealer, d.id);
      if (!secrets) continue;
      next.set(d.id, this.pipeFor(d, secrets.url, secrets.headers));
      this.versions.set(d.id, d.updated_at);
    }
    const gone = [...this.pipes.values()].filter((p) => next.get(p.id) !== p);
    this.pipes = next;
    this.index();
    // Replaced pipes are closed after the switch, their last counts saved.
    await Promise.all(
      gone.map(async (p) => {
        await p.close();
        await this.saveOne(p);
        if (!next.has(p.id)) this.versions.delete(p.id);
      }),
    );
    void this.collector.scan();
  }

  private pipeFor(d: DrainRow, url: string, headers: Record<string, string>): DrainPipe {
    const kind = DRAIN_KIND_TABLE[d.kind];
    return new DrainPipe({
      id: d.id,
      kind,
      sender: kind.sender({ url, headers, transport: this.transport }),
      appIds: d.app_ids ? new Set(d.app_ids) : null,
      maxLines: this.deps.bufferLines,
      maxBytes: this.deps.bufferBytes ?? DRAIN_BUFFER_BYTES,
      now: this.deps.now,
      ...this.pipeTimings,
    });
  }

  private index(): void {
    const all: DrainPipe[] = [];
    const apps = new Map<string, DrainPipe[]>();
    for (const p of this.pipes.values()) {
      if (p.appIds === null) all.push(p);
      else for (const a of p.appIds) (apps.get(a) ?? apps.set(a, []).get(a)!).push(p);
    }
    this.byApp = { all, apps };
    this.wanted = all.length ? null : new Set(apps.keys());
  }

  private async save(): Promise<void> {
    await Promise.all([...this.pipes.values()].map((p) => this.saveOne(p)));
  }

  private async saveOne(p: DrainPipe): Promise<void> {
    const c = p.takeCounts();
    if (!c.delivered && !c.dropped && !c.last) return;
    await addDrainCounts(this.deps.db, p.id, c).catch((err) =>
      this.deps.log?.warn({ drain: p.id, err: String(err) }, 'drain counters not saved'),
    );
  }

  /** The row with the live state (counts not yet saved included). */
  view(row: DrainRow): DrainView {
    const p = this.pipes.get(row.id);
    if (!p) return { ...row, buffered: 0, state: row.enabled ? 'idle' : 'disabled' };
    const c = p.peekCounts();
    return {
      ...row,
      delivered: row.delivered + c.delivered,
      dropped: row.dropped + c.dropped,
      last_delivery: c.last ?? row.last_delivery,
      buffered: p.buffered,
      state: p.state,
    };
  }

  /** Lines accepted by a drain since it (re)started: delivered + dropped + waiting (tests, bench). */
  accepted(id: string): number {
    return this.pipes.get(id)?.accepted ?? 0;
  }

  /** Writes the counters now (tests read the rows). */
  flushCounts(): Promise<void> {
    return this.save();
  }

  /** The `test` route: one line to the drain's receiver now, through a sender of its own. */
  async test(id: string): Promise<BatchResult> {
    const d = await getDrainRow(this.deps.db, id);
    const secrets = (await drainSecrets(this.deps.db, this.deps.sealer, id))!;
    const sender = DRAIN_KIND_TABLE[d.kind].sender({
      url: secrets.url,
      headers: secrets.headers,
      transport: this.transport,
    });
    try {
      return await sender.send([
        {
          at: this.deps.now(),
          appId: '',
          app: 'svc',
          service: 'test',
          container: 'test',
          stream: 'stdout',
          source: 'container',
          line: `svc log drain test: ${d.name}`,
        },
      ]);
    } finally {
      sender.close();
    }
  }
}
