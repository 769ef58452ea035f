// One API socket's subscriptions: `{"type":"subscribe"|"unsubscribe","topic"}` messages, each
// topic authorised by the topic table (runtime/topics.ts) and fed from the bus; a credential change
// that narrows the socket's access withdraws what it no longer allows.
import { WebSocket, type RawData } from 'ws';
import type { Services } from '#lib/http/handler.js';
import type { Principal } from '#lib/http/handler.js';
import type { BusEvent } from '#lib/events/bus.js';
import { HttpError } from '#lib/http/errors.js';
import { eventVisible, grantHolds, type TopicGrant } from '#lib/auth/topics.js';
import { authoriseTopic, parseTopic, type Topic } from './topics.js';

const MAX_TOPICS = 64;
// A subscriber that stops reading must not make us buffer without bound.
const MAX_BUFFERED = 4 * 1024 * 1024;
// A replay (a whole build log: 100,000 lines is ~15 MB of frames) is paced to the socket: above
// this much unsent, the next replayed frame waits until the last one is written out, so a long
// history never trips MAX_BUFFERED, which would close the socket, and the client's resubscribe
// would start the same replay over again.
const REPLAY_HIGH_WATER = 512 * 1024;

export interface Subscriptions {
  /** The topics this socket listens to. */
  topics(): IterableIterator<string>;
  /** The socket's credential now allows less: drop what it no longer may see. */
  narrowed(p: Principal): void;
  /** The socket closed. */
  close(): void;
}

/** Serves the subscription messages of one socket acting as `principal`. */
export function subscriptions(
  env: Pick<Services, 'db' | 'bus'>,
  ws: WebSocket,
  principal: Principal,
): Subscriptions {
  const topics = new SocketTopics(env, ws, principal);
  ws.on('message', (raw, isBinary) => topics.onMessage(raw, isBinary));
  return {
    topics: () => topics.subs.keys(),
    narrowed: (p) => topics.narrowed(p),
    close: () => topics.close(),
  };
}

class SocketTopics {
  /** Each topic's unsubscribe (a no-op while its subscription is being made). */
  readonly subs = new Map<string, () => void>();
  readonly #grants = new Map<string, TopicGrant>();
  /** The access this socket acts with now: replaced when a credential change narrows it. */
  #current: Principal;
  readonly #send: (msg: unknown) => void;

  constructor(
    private readonly env: Pick<Services, 'db' | 'bus'>,
    private readonly ws: WebSocket,
    principal: Principal,
  ) {
    this.#current = principal;
    this.#send = sender(ws);
  }

  onMessage(raw: RawData, isBinary: boolean): void {
    const send = this.#send;
    const msg = message(raw, isBinary);
    if (typeof msg === 'string') return send({ type: 'error', code: 'bad_request', error: msg });
    const topic = parseTopic(msg.topic);
    if (topic === null) return send({ type: 'error', code: 'bad_request', error: 'unknown topic' });
    const name = msg.topic as string;
    if (msg.type === 'unsubscribe') {
      this.#drop(name);
      return send({ type: 'unsubscribed', topic: name });
    }
    if (this.subs.has(name)) return send({ type: 'subscribed', topic: name });
    if (this.subs.size >= MAX_TOPICS)
      return send({
        type: 'error',
        code: 'bad_request',
        error: `at most ${MAX_TOPICS} topics per connection`,
      });
    void this.#subscribe(topic, name);
  }

  async #subscribe(topic: Topic, name: string): Promise<void> {
    const { subs, ws } = this;
    subs.set(name, () => {});
    let grant: TopicGrant;
    try {
      grant = await authoriseTopic(this.env.db, this.#current, topic);
    } catch (err) {
      subs.delete(name);
      const known = err instanceof HttpError;
      const error = `cannot subscribe to ${name}` + (known ? `: ${err.message}` : '');
      return this.#send({ type: 'error', code: known ? err.code : 'internal_error', error, topic: name });
    }
    if (!subs.has(name) || ws.readyState !== WebSocket.OPEN) return;
    const off = await this.env.bus.subscribe(name, (e) => deliver(ws, this.#send, this.#current, e));
    if (!subs.has(name) || ws.readyState !== WebSocket.OPEN) return off();
    if (!grantHolds(this.#current, grant)) {
      // Access narrowed while the subscription was being made.
      off();
      subs.delete(name);
      return this.#withdrawn(name);
    }
    subs.set(name, off);
    this.#grants.set(name, grant);
    this.#send({ type: 'subscribed', topic: name });
  }

  narrowed(p: Principal): void {
    this.#current = p;
    for (const [topic, grant] of this.#grants) {
      if (grantHolds(p, grant)) continue;
      this.#drop(topic);
      this.#withdrawn(topic);
    }
  }

  close(): void {
    for (const off of this.subs.values()) off();
    this.subs.clear();
  }

  #drop(topic: string): void {
    this.subs.get(topic)?.();
    this.subs.delete(topic);
    this.#grants.delete(topic);
  }

  #withdrawn(topic: string): void {
    this.#send({ type: 'error', code: 'forbidden', error: `access to ${topic} was withdrawn`, topic });
  }
}

/** A subscription message, or what is wrong with it. */
function message(
  raw: RawData,
  isBinary: boolean,
): { type: 'subscribe' | 'unsubscribe'; topic: unknown } | string {
  if (isBinary) return 'messages must be JSON text';
  let msg: { type?: unknown; topic?: unknown };
  try {
    msg = JSON.parse(raw.toString('utf8'));
  } catch {
    return 'message is not valid JSON';
  }
  if (msg === null || typeof msg !== 'object') return 'message must be an object';
  if (msg.type !== 'subscribe' && msg.type !== 'unsubscribe')
    return 'type must be "subscribe" or "unsubscribe"';
  return { type: msg.type, topic: msg.topic };
}

/** Sends a JSON frame to an open socket; one too slow to read what it is sent is closed. */
function sender(ws: WebSocket): (msg: unknown) => void {
  return (msg) => {
    if (ws.readyState !== WebSocket.OPEN) return;
    if (ws.bufferedAmount > MAX_BUFFERED) {
      ws.close(1013, 'subscriber too slow');
      return;
    }
    ws.send(JSON.stringify(msg));
  };
}

/** An event of a subscribed topic, if this socket may see it; a replay waits for the socket to drain. */
function deliver(ws: WebSocket, send: (msg: unknown) => void, current: Principal, e: BusEvent): unknown {
  if (!eventVisible(current, e.data)) return;
  const frame = { type: 'event', topic: e.topic, ts: e.ts, data: e.data };
  if (
    ws.readyState !== WebSocket.OPEN ||
    ws.bufferedAmount <= REPLAY_HIGH_WATER ||
    ws.bufferedAmount > MAX_BUFFERED
  )
    return send(frame);
  // Only the replay awaits this; live events are sent at once (and bounded by send()).
  return new Promise<void>((resolve) => ws.send(JSON.stringify(frame), () => resolve()));
}
