// The in-process topic bus: lib/ publishes, WebSocket subscribers (and notification channels) listen.
// A topic source may replay history to a new subscriber and start/stop work while anyone listens.

export interface BusEvent {
  topic: string;
  ts: string;
  data: unknown;
}

export type Listener = (event: BusEvent) => void;
/**
 * A subscriber's listener. During the replay it may answer a promise to slow the replay down
 * (a socket whose send buffer is full); live events are never awaited.
 */
export type ReplayListener = (event: BusEvent) => unknown;

export interface TopicSource {
  /** Events a new subscriber receives before live ones (e.g. the build log so far). */
  replay?(topic: string): BusEvent[] | Promise<BusEvent[]>;
  /** First subscriber arrived: begin producing (e.g. collect stats). */
  start?(topic: string): void;
  /** Last subscriber left: stop producing. */
  stop?(topic: string): void;
}

// ctx.env of every handler carries it (the service registry of lib/http/handler.ts).
declare module '../http/handler.js' {
  interface Services {
    bus: Bus;
  }
}

export class Bus {
  private readonly listeners = new Map<string, Set<Listener>>();
  private readonly sources = new Map<string, TopicSource>();
  private readonly all = new Set<Listener>();

  /** Registers the source of every topic `prefix` or `prefix:<id>`. */
  source(prefix: string, source: TopicSource): void {
    this.sources.set(prefix, source);
  }

  publish(topic: string, data: unknown): void {
    const event: BusEvent = { topic, ts: new Date().toISOString(), data };
    const set = this.listeners.get(topic);
    if (set) for (const fn of set) safeCall(fn, event);
    for (const fn of this.all) safeCall(fn, event);
  }

  /**
   * Subscribes; replayed events reach the listener first. Live events published while the replay
   * is being read are held back and delivered after it, skipping any the replay already had
   * (sources mark order with a numeric `seq` in data when duplicates are possible).
   */
  async subscribe(topic: string, fn: ReplayListener): Promise<() => void> {
    const source = this.sources.get(topic.split(':')[0]!);
    let buffered: BusEvent[] | null = source?.replay ? [] : null;
    const wrapper: Listener = (e) => {
      if (buffered) buffered.push(e);
      else void fn(e);
    };
    let set = this.listeners.get(topic);
    const first = !set || set.size === 0;
    if (!set) this.listeners.set(topic, (set = new Set()));
    set.add(wrapper);
    if (first) source?.start?.(topic);
    if (source?.replay) {
      let history: BusEvent[] = [];
      try {
        history = await source.replay(topic);
      } catch {
        history = [];
      }
      let lastSeq = -Infinity;
      for (const e of history) {
        const pending = fn(e);
        if (pending instanceof Promise) await pending;
        lastSeq = seqOf(e) ?? lastSeq;
      }
      const held = buffered ?? [];
      buffered = null;
      for (const e of held) {
        const s = seqOf(e);
        if (s !== undefined && s <= lastSeq) continue;
        fn(e);
      }
    }
    let active = true;
    return () => {
      if (!active) return;
      active = false;
      const s = this.listeners.get(topic);
      if (!s) return;
      s.delete(wrapper);
      if (s.size === 0) {
        this.listeners.delete(topic);
        source?.stop?.(topic);
      }
    };
  }

  /** Every event on every topic (for notification channels and tests). */
  onAny(fn: Listener): () => void {
    this.all.add(fn);
    return () => this.all.delete(fn);
  }

  subscriberCount(topic: string): number {
    return this.listeners.get(topic)?.size ?? 0;
  }
}

function seqOf(e: BusEvent): number | undefined {
  const d = e.data as { seq?: unknown } | null;
  return d && typeof d.seq === 'number' ? d.seq : undefined;
}

function safeCall(fn: Listener, e: BusEvent): void {
  try {
    fn(e);
  } catch {
    // One broken subscriber must not stop delivery to the others.
  }
}
