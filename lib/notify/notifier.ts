// Turns bus events into deliveries: every event whose data.type is a notification event reaches
// the channels subscribed to it (each kind's delivery is its file in ./kinds/), off the request
// path, through the outbound guard, with up to 3 attempts and backoff. traffic_anomaly is
// debounced per (IP, kind) for the monitor's cooldown.
import type { Bus, BusEvent } from '../events/bus.js';
import type { Db } from '../db/index.js';
import type { Sealer } from '../crypto/seal.js';
import type { Logger } from '../log.js';
import type { OutboundOptions } from '../net/outbound.js';
import { buildMessage, isNotifyEvent, type Message, type NotifyEvent } from './message.js';
import {
  channelsFor,
  channelSecret,
  channelUrl,
  getChannel,
  listChannels,
  recordDelivery,
  type Channel,
} from './store.js';
import { CHANNEL_KIND_TABLE, type Delivery } from './kinds/index.js';

/** Events whose deliveries their owner makes itself (the alert outbox, lib/alerts/outbox.ts). */
const OWNED_ELSEWHERE: ReadonlySet<NotifyEvent> = new Set(['alert_fired', 'alert_resolved']);

export const MAX_ATTEMPTS = 3;
const QUEUE_MAX = 500;
const DEBOUNCE_MAX_KEYS = 4096;

export interface NotifierDeps {
  db: Db;
  sealer: Sealer;
  log: Logger;
  /** The control plane's own URL (https://<control domain> or SVC_PUBLIC_URL), for links. */
  baseUrl: string | null;
  cooldownSeconds: number;
  now: () => number;
}

export interface SendResult {
  ok: boolean;
  status: number | null;
  error?: string;
  attempts: number;
  /** The guard refused the URL (it would be a 400 at save time too). */
  refused?: boolean;
}

// ctx.env of every handler carries it (the service registry of lib/http/handler.ts).
declare module '../http/handler.js' {
  interface Services {
    /** Notification channels: bus events to Discord/Slack through the outbound guard. */
    notifier: Notifier;
  }
}

export class Notifier {
  /** The guard's settings (SVC_NOTIFY_ALLOW); tests add an agent trusting their receiver. */
  readonly transport: OutboundOptions;
  /** Waits between attempts (ms); the first attempt is immediate. */
  backoffMs = [1_000, 4_000];
  private readonly queue: Array<() => Promise<void>> = [];
  private running = 0;
  private readonly debounce = new Map<string, number>();
  private idleWaiters: Array<() => void> = [];
  private stopped = false;
  private unsubscribe: (() => void) | null = null;

  constructor(
    private readonly deps: NotifierDeps,
    transport: OutboundOptions,
  ) {
    this.transport = { ...transport };
  }

  start(bus: Bus): void {
    this.stopped = false;
    this.unsubscribe = bus.onAny((e) => this.onEvent(e));
  }

  stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    this.unsubscribe = null;
    this.queue.length = 0;
    return this.idle();
  }

  /** Stopping (deliveries in flight end early): what they did not do is not done. */
  isStopped(): boolean {
    return this.stopped;
  }

  /** Resolves when nothing is queued or in flight (tests, shutdown). */
  idle(): Promise<void> {
    if (this.running === 0 && this.queue.length === 0) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  private onEvent(e: BusEvent): void {
    const data = e.data as Record<string, unknown> | null;
    const type = data?.type;
    if (!data || !isNotifyEvent(type) || OWNED_ELSEWHERE.has(type)) return;
    if (type === 'traffic_anomaly') {
      // Allow-listed addresses are recorded by the monitor and never notified.
      if (data.notified === false) return;
      const key = `${String(data.ip)}|${String(data.kind)}`;
      const now = this.deps.now();
      const last = this.debounce.get(key);
      if (last !== undefined && now - last < this.deps.cooldownSeconds * 1000) return;
      this.debounce.delete(key);
      this.debounce.set(key, now);
      if (this.debounce.size > DEBOUNCE_MAX_KEYS) this.debounce.delete(this.debounce.keys().next().value!);
    }
    this.dispatch(type, data, e.ts);
  }

  /** Queues the event for every subscribed channel; never blocks the publisher. */
  dispatch(
    event: NotifyEvent,
    data: Record<string, unknown>,
    at = new Date(this.deps.now()).toISOString(),
  ): void {
    if (this.stopped) return;
    const message = buildMessage(event, data, this.deps.baseUrl, at);
    this.enqueue(async () => {
      const channels = await channelsFor(this.deps.db, event);
      await Promise.all(channels.map((c) => this.deliver(c, message)));
    });
  }

  /**
   * Delivers one event to the given channels (none given: every enabled channel subscribed to it)
   * and resolves once every delivery ended, with how many reached their channel. For an owner
   * that records what it sent (the alert outbox).
   */
  async send(
    event: NotifyEvent,
    data: Record<string, unknown>,
    channelIds: readonly string[],
  ): Promise<number> {
    const message = buildMessage(event, data, this.deps.baseUrl, new Date(this.deps.now()).toISOString());
    const channels = channelIds.length
      ? (await listChannels(this.deps.db)).filter((c) => c.enabled && channelIds.includes(c.id))
      : await channelsFor(this.deps.db, event);
    const results = await Promise.all(channels.map((c) => this.deliver(c, message)));
    return results.filter((r) => r.ok).length;
  }

  /** The `test` route: one message to one channel now, answered to the caller (and logged). */
  async test(channelId: string): Promise<SendResult> {
    const channel = await getChannel(this.deps.db, channelId);
    const message = buildMessage(
      'control_plane_started',
      {},
      this.deps.baseUrl,
      new Date(this.deps.now()).toISOString(),
    );
    message.title = `Test notification for ${channel.name}`;
    message.text = 'If you can read this, svc can reach this channel.';
    message.fields = [];
    return this.deliver(channel, message, 1);
  }

  private enqueue(job: () => Promise<void>): void {
    if (this.queue.length >= QUEUE_MAX) {
      this.deps.log.warn({ queued: this.queue.length }, 'notification queue full; dropping an event');
      return;
    }
    this.queue.push(job);
    this.pump();
  }

  private pump(): void {
    while (this.running < 4 && this.queue.length) {
      const job = this.queue.shift()!;
      this.running++;
      void job()
        .catch((err) => this.deps.log.warn({ err: String(err) }, 'notification delivery failed'))
        .finally(() => {
          this.running--;
          this.pump();
          if (this.running === 0 && this.queue.length === 0) {
            const w = this.idleWaiters;
            this.idleWaiters = [];
            for (const fn of w) fn();
          }
        });
    }
  }

  private async deliver(channel: Channel, message: Message, maxAttempts = MAX_ATTEMPTS): Promise<SendResult> {
    const url = await channelUrl(this.deps.db, this.deps.sealer, channel.id);
    if (url === null) return { ok: false, status: null, error: 'channel deleted', attempts: 0 };
    const kind = CHANNEL_KIND_TABLE[channel.kind];
    const ctx = {
      url,
      secret: kind.signed ? await channelSecret(this.deps.db, this.deps.sealer, channel.id) : null,
      options: channel.to ? { to: channel.to } : {},
      transport: this.transport,
    };
    let result: SendResult = { ok: false, status: null, attempts: 0 };
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      result = { ...(await kind.send(message, ctx)), attempts: attempt };
      if (result.ok || !retryable(result) || this.stopped) break;
      if (attempt < maxAttempts) await sleep(this.backoffMs[attempt - 1] ?? this.backoffMs.at(-1) ?? 1000);
    }
    await recordDelivery(this.deps.db, channel.id, {
      at: new Date(this.deps.now()).toISOString(),
      event: message.event,
      ok: result.ok,
      status: result.status,
      error: result.error ?? null,
      attempts: result.attempts,
    });
    if (!result.ok)
      this.deps.log.warn(
        { channel: channel.id, event: message.event, status: result.status, error: result.error },
        'notification not delivered',
      );
    return result;
  }
}

function retryable(r: Delivery): boolean {
  if (r.refused) return false;
  return r.status === null || r.status >= 500 || r.status === 429;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms).unref());
}
