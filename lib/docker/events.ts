// Docker's event stream, narrowed to containers we manage, with reconnects. Resuming from the
// last event's time means a reconnect neither loses nor repeats events (Docker replays from `since`,
// and what was already delivered is skipped by identity).
import { request, type IncomingMessage } from 'node:http';
import type { Engine } from './engine.js';
import { LABEL_APP, LABEL_DEPLOYMENT, LABEL_RUN, LABEL_SERVICE } from './names.js';
import { isOwned, ownedFilter } from './owner.js';
import { sleep } from '../util/sleep.js';

export interface ContainerEvent {
  app: string;
  service: string;
  /** Container name. */
  container: string;
  container_id: string;
  deployment: string;
  /** Docker's action: start, die, stop, kill, restart, health_status, destroy, create, oom... */
  action: string;
  /** What the container now is: running, exited, healthy, unhealthy, removed, created, paused... */
  status: string;
  exit_code?: number;
  /** ISO-8601. */
  at: string;
}

interface RawEvent {
  Type?: string;
  Action?: string;
  status?: string;
  id?: string;
  time?: number;
  timeNano?: number;
  Actor?: { ID?: string; Attributes?: Record<string, string> };
}

const STATUS: Record<string, string> = {
  create: 'created',
  start: 'running',
  restart: 'running',
  unpause: 'running',
  pause: 'paused',
  die: 'exited',
  stop: 'exited',
  kill: 'killed',
  oom: 'oom',
  destroy: 'removed',
};

export function toContainerEvent(e: RawEvent): ContainerEvent | null {
  const attrs = e.Actor?.Attributes ?? {};
  const app = attrs[LABEL_APP];
  if (e.Type !== 'container' || !app || !e.Action) return null;
  // A one-off run ends by design: never a crash, never a change of the app's status.
  if (attrs[LABEL_RUN]) return null;
  let action = e.Action;
  let status: string | undefined;
  if (action.startsWith('health_status')) {
    status = action.split(':')[1]?.trim() || 'unknown';
    action = 'health_status';
  } else if (action.startsWith('exec_')) return null;
  else status = STATUS[action];
  if (!status) return null;
  const exit = attrs.exitCode !== undefined ? Number(attrs.exitCode) : undefined;
  return {
    app,
    service: attrs[LABEL_SERVICE] ?? '',
    container: attrs.name ?? '',
    container_id: e.Actor?.ID ?? e.id ?? '',
    deployment: attrs[LABEL_DEPLOYMENT] ?? '',
    action,
    status,
    ...(exit !== undefined && Number.isFinite(exit) ? { exit_code: exit } : {}),
    at: new Date(e.timeNano ? Math.floor(e.timeNano / 1e6) : (e.time ?? 0) * 1000).toISOString(),
  };
}

export interface FollowOptions {
  /** Called when the stream fails or ends; the follower reconnects anyway. */
  onError?: (err: unknown, retryInMs: number) => void;
  /**
   * Called each time the stream is (re)established: the engine answers again. `resumed` is true
   * after a failure, when work that failed for want of an engine can be retried.
   */
  onConnect?: (resumed: boolean) => void;
  maxBackoffMs?: number;
}

/**
 * The engine's event stream, straight from its HTTP API over the socket: a long-lived GET that
 * this module reads line by line, with no need for the full client library.
 */
function eventStream(engine: Engine, since: number, signal: AbortSignal): Promise<IncomingMessage> {
  const socketPath = engine.socketPath;
  const filters = JSON.stringify({ type: ['container'], ...ownedFilter(engine, [LABEL_APP]) });
  const path = `/events?since=${since}&filters=${encodeURIComponent(filters)}`;
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path, method: 'GET', signal }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        reject(new Error(`engine answered ${res.statusCode} to the event stream`));
        return;
      }
      resolve(res);
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * The events delivered since the second `since` names, by identity: a reconnect replays that
 * second and the skip must not lose anything. Not by time alone: the engine stamps an event
 * before it publishes it, from several threads at once (a container's `kill` and its execs'
 * `exec_die`), so one can arrive after a later-stamped one.
 */
class Delivered {
  private readonly seen = new Map<string, number>();

  /** True the first time this event is seen. */
  first(raw: RawEvent): boolean {
    const key = `${raw.timeNano ?? raw.time}|${raw.Actor?.ID ?? raw.id}|${raw.Action}`;
    if (this.seen.has(key)) return false;
    this.seen.set(key, raw.time ?? 0);
    if (this.seen.size > 10_000) this.seen.delete(this.seen.keys().next().value!);
    return true;
  }

  /** What is older than `since` is never replayed. */
  forgetBefore(since: number): void {
    for (const [key, time] of this.seen) {
      if (time >= since) break;
      this.seen.delete(key);
    }
  }
}

/** Follows events until signal aborts. Never throws for stream trouble: it backs off and reconnects. */
export async function followEvents(
  engine: Engine,
  onEvent: (e: ContainerEvent) => void,
  signal: AbortSignal,
  opts: FollowOptions = {},
): Promise<void> {
  let since = Math.floor(Date.now() / 1000);
  let backoff = 250;
  const maxBackoff = opts.maxBackoffMs ?? 10_000;
  const delivered = new Delivered();
  let failed = false;
  while (!signal.aborted) {
    try {
      const stream = await eventStream(engine, since, signal);
      try {
        opts.onConnect?.(failed);
      } catch {
        /* the caller's problem, not the stream's */
      }
      failed = false;
      const onAbort = () => stream.destroy?.();
      signal.addEventListener('abort', onAbort, { once: true });
      let buf = '';
      try {
        for await (const chunk of stream) {
          backoff = 250;
          buf += chunk.toString();
          let nl: number;
          while ((nl = buf.indexOf('\n')) >= 0) {
            const line = buf.slice(0, nl).trim();
            buf = buf.slice(nl + 1);
            if (!line) continue;
            let raw: RawEvent;
            try {
              raw = JSON.parse(line) as RawEvent;
            } catch {
              continue;
            }
            // `since` has one-second resolution: skip what we already delivered after a reconnect.
            if (!delivered.first(raw)) continue;
            if (raw.time && raw.time > since) delivered.forgetBefore((since = raw.time));
            const ev = toContainerEvent(raw);
            // Events carry the container's labels as attributes: an app's only when this instance made it.
            if (ev && isOwned(engine, 'container', ev.container_id, raw.Actor?.Attributes)) {
              try {
                onEvent(ev);
              } catch {
                /* a subscriber's bug must not kill the follower */
              }
            }
          }
        }
      } finally {
        signal.removeEventListener('abort', onAbort);
      }
      if (signal.aborted) return;
      failed = true;
      opts.onError?.(new Error('event stream ended'), backoff);
    } catch (e) {
      if (signal.aborted) return;
      failed = true;
      opts.onError?.(e, backoff);
    }
    try {
      await sleep(backoff, signal);
    } catch {
      return;
    }
    backoff = Math.min(backoff * 2, maxBackoff);
  }
}
