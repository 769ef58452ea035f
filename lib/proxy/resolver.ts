// The control plane's answer to "where does this service run now": a DNS server on loopback
// (node:dgram, UDP) that Caddy's dynamic upstreams ask (lib/proxy/config.ts). A deploy, a
// rollback, a restart, sleeping and waking change its answers, never Caddy's configuration.
//
// - Answers come from the rows (the proxy_upstreams rows of running containers; nothing for an
//   app that sleeps or has no container, which is NXDOMAIN). They are re-read per app after each
//   change and in full at every proxy sync; re-reads run one at a time, so a later one never
//   applies older rows.
// - When has Caddy picked a change up? Caddy caches a found answer per name for its refresh
//   period (LOOKUP_REFRESH_MS) and keeps nothing of a failed lookup. Every name has its own cache
//   entry (lookup-names.ts), and this server sees every lookup: after a change, an entry is
//   current once Caddy asked again (both A and AAAA: Go's resolver sends the two at once), or
//   once the refresh period has passed since the last found answer it may hold (plus a margin
//   for Caddy's clock starting after our reply). `update` resolves at that moment, so "switched"
//   means that new connections go to the new answer.
import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import type { Logger } from '../log.js';
import { QTYPE_A, QTYPE_AAAA, RCODE_NXDOMAIN, RCODE_OK, readQuestion, writeAnswer } from './dns-wire.js';
import { LOOKUP_REFRESH_MS, parseLookupName } from './lookup-names.js';

/** app id -> service label (lookup-names.ts `serviceLabel`) -> addresses. An app absent: NXDOMAIN. */
export type Answers = ReadonlyMap<string, ReadonlyMap<string, readonly string[]>>;

export interface ResolverOptions {
  /** The answers of one app (`appId`), or of every app (null), as the rows say now. */
  load(appId: string | null): Promise<Answers>;
  log: Logger;
  refreshMs?: number;
  /** Added to the refresh period when waiting for a cached answer to expire. */
  marginMs?: number;
}

/** What the resolver saw of one name: the tick of its last A and AAAA lookups, when a found answer last left. */
interface Seen {
  a: number;
  aaaa: number;
  foundAt: number;
}

export class UpstreamResolver {
  private readonly opts: ResolverOptions;
  private socket: Socket | null = null;
  private bound: { host: string; port: number } | null = null;
  private table = new Map<string, ReadonlyMap<string, readonly string[]>>();
  private seen = new Map<string, Map<string, Seen>>();
  /** Counts changes of the table: a lookup records the tick it was answered at. */
  private tick = 0;
  private listeners = new Map<string, Set<() => void>>();
  private reads: Promise<unknown> = Promise.resolve();
  readonly counts = { lookups: 0, found: 0, unknown: 0, unreadable: 0 };

  constructor(opts: ResolverOptions) {
    this.opts = opts;
  }

  private get refreshMs(): number {
    return this.opts.refreshMs ?? LOOKUP_REFRESH_MS;
  }

  /** Binds the UDP socket (port 0: any free one); resolves with the port. */
  listen(port: number, host = '127.0.0.1'): Promise<number> {
    return new Promise((resolve, reject) => {
      const socket = createSocket({ type: host.includes(':') ? 'udp6' : 'udp4' });
      socket.once('error', reject);
      socket.on('message', (msg, rinfo) => this.onMessage(msg, rinfo));
      socket.bind(port, host, () => {
        socket.off('error', reject);
        socket.on('error', (err) =>
          this.opts.log.warn({ err: String(err) }, 'upstream resolver socket error'),
        );
        this.socket = socket;
        this.bound = { host, port: socket.address().port };
        resolve(this.bound.port);
      });
    });
  }

  /** Caddy's spelling of where to ask: `udp/127.0.0.1:<port>`; null before listen. */
  get address(): string | null {
    if (!this.bound) return null;
    const h = this.bound.host.includes(':') ? `[${this.bound.host}]` : this.bound.host;
    return `udp/${h}:${this.bound.port}`;
  }

  close(): Promise<void> {
    const s = this.socket;
    this.socket = null;
    for (const set of this.listeners.values()) for (const fn of set) fn();
    return s ? new Promise((r) => s.close(() => r())) : Promise.resolve();
  }

  /** Re-reads the answers of one app (or all) from the rows, after every re-read asked before. */
  reload(appId: string | null = null): Promise<void> {
    const next = this.reads.then(async () => {
      const answers = await this.opts.load(appId);
      this.tick++;
      if (appId === null) {
        this.table = new Map(answers);
        this.forgetExpired();
      } else {
        const mine = answers.get(appId);
        if (mine && mine.size) this.table.set(appId, mine);
        else this.table.delete(appId);
      }
    });
    this.reads = next.catch(() => {});
    return next;
  }

  /**
   * After the app's rows changed: its answers re-read, then resolves once Caddy holds no answer
   * from before (at most the refresh period and margin later). Resolves with the time waited for Caddy (ms).
   */
  async update(appId: string): Promise<number> {
    await this.reload(appId);
    const since = this.tick;
    const t0 = performance.now();
    await this.pickedUp(appId, since);
    return performance.now() - t0;
  }

  /** The answer a lookup of `appId`'s names gets now (for tests and the posture): service label -> addresses. */
  answers(appId: string): ReadonlyMap<string, readonly string[]> | null {
    return this.table.get(appId) ?? null;
  }

  private async pickedUp(appId: string, since: number): Promise<void> {
    const margin = this.opts.marginMs ?? 100;
    for (;;) {
      if (!this.socket) return;
      const now = performance.now();
      let until = 0;
      for (const s of this.seen.get(appId)?.values() ?? []) {
        if (s.a >= since && s.aaaa >= since) continue;
        until = Math.max(until, s.foundAt + this.refreshMs + margin);
      }
      if (until <= now) return;
      await new Promise<void>((resolve) => {
        const set = this.listeners.get(appId) ?? new Set();
        this.listeners.set(appId, set);
        const done = () => {
          clearTimeout(timer);
          set.delete(done);
          resolve();
        };
        const timer = setTimeout(done, until - now);
        set.add(done);
      });
    }
  }

  private onMessage(msg: Buffer, rinfo: RemoteInfo): void {
    const q = readQuestion(msg);
    if (!q) {
      this.counts.unreadable++;
      return;
    }
    this.counts.lookups++;
    const name = parseLookupName(q.name);
    const app = name ? this.table.get(name.appId) : undefined;
    const list = name && app ? app.get(name.label) : undefined;
    const found = !!list && list.length > 0;
    if (found) this.counts.found++;
    else this.counts.unknown++;
    if (name && (app || this.seen.has(name.appId))) this.record(name.appId, q.name, q.qtype, found);
    this.socket?.send(
      writeAnswer(q, found ? RCODE_OK : RCODE_NXDOMAIN, list ?? []),
      rinfo.port,
      rinfo.address,
    );
  }

  private record(appId: string, qname: string, qtype: number, found: boolean): void {
    let names = this.seen.get(appId);
    if (!names) this.seen.set(appId, (names = new Map()));
    let s = names.get(qname);
    if (!s) names.set(qname, (s = { a: -1, aaaa: -1, foundAt: -Infinity }));
    if (qtype === QTYPE_A) s.a = this.tick;
    else if (qtype === QTYPE_AAAA) s.aaaa = this.tick;
    if (found) s.foundAt = performance.now();
    const waiting = this.listeners.get(appId);
    if (waiting) for (const fn of [...waiting]) fn();
  }

  /** Drops what it saw of names whose cached answers expired long ago (apps deleted, ports changed). */
  private forgetExpired(): void {
    const old = performance.now() - 10 * this.refreshMs - 1000;
    for (const [appId, names] of this.seen) {
      for (const [n, s] of names) if (s.foundAt < old) names.delete(n);
      if (!names.size) this.seen.delete(appId);
    }
  }
}
